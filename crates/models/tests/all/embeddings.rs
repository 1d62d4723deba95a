//! all-MiniLM-L6-v2 embeddings against the reference in `tests/fixtures/minilm`: PyTorch's own
//! f32 and f16 results (`make_reference.py`, sentence-transformers on an H200). Each file
//! names its source.
//!
//! A BERT forward is heavy for lavapipe: float32 runs all 16 sentences (in length-sorted
//! batches of 4, each padded, so the padding mask is checked too), float16 the 13 of at most
//! 40 tokens.

use crate::common;

use wgrad_models::{JitEmbedder, ModelError, SentenceEmbedder, TokenBatch, cosine_similarity};
use wgrad_tensor::{DType, JitError, TensorError};

/// Embeds the test sentences with at most `max_tokens` tokens in `dtype` and compares them
/// with `file`'s within `atol`.
fn check(dtype: DType, file: &str, max_tokens: usize, atol: f32) {
    let Some(dir) = common::model_dir().filter(|_| common::on_wgpu()) else { return };
    let model = SentenceEmbedder::load(&dir, dtype).unwrap();
    let reference = common::fixture(file);
    let want: Vec<Vec<f32>> = serde_json::from_value(reference["embeddings"].clone()).unwrap();
    let tokens: Vec<Vec<u32>> =
        serde_json::from_value(common::fixture("tokens.json")["tokens"].clone()).unwrap();
    let sentences = common::sentences();
    let picked: Vec<usize> = (0..sentences.len()).filter(|&i| tokens[i].len() <= max_tokens).collect();
    let texts: Vec<&str> = picked.iter().map(|&i| sentences[i].as_str()).collect();
    let got = model.embed_all(&texts, 4).unwrap();
    for (&i, g) in picked.iter().zip(&got) {
        assert_eq!(g.len(), 384);
        let worst = g.iter().zip(&want[i]).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
        assert!(
            worst <= atol,
            "sentence {i} {:?}: off by {worst} > {atol} from {}",
            sentences[i],
            reference["source"]
        );
    }
}

#[test]
fn f32_embeddings_match_the_reference() {
    check(DType::F32, "embeddings_f32.json", usize::MAX, 1e-4);
}

#[test]
fn f16_embeddings_match_the_reference() {
    check(DType::F16, "embeddings_f16.json", 40, 2e-3);
}

#[test]
fn paraphrases_are_close() {
    let Some(dir) = common::model_dir().filter(|_| common::on_wgpu()) else { return };
    let model = SentenceEmbedder::load(&dir, DType::F32).unwrap();
    let v = model
        .embed_all(
            &["Paris is the capital of France.", "The capital of France is Paris.", "A man is eating food."],
            3,
        )
        .unwrap();
    assert!(cosine_similarity(&v[0], &v[1]) > 0.9, "{}", cosine_similarity(&v[0], &v[1]));
    assert!(cosine_similarity(&v[0], &v[2]) < 0.3, "{}", cosine_similarity(&v[0], &v[2]));
    let norm: f32 = v[0].iter().map(|x| x * x).sum::<f32>().sqrt();
    assert!((norm - 1.0).abs() < 1e-5, "normalized: {norm}");
}

/// `batch` with its two rows swapped: other data of the same shape.
fn swapped(batch: &TokenBatch) -> TokenBatch {
    let swap = |v: &[u32]| [&v[batch.seq_len..], &v[..batch.seq_len]].concat();
    TokenBatch {
        ids: swap(&batch.ids),
        type_ids: swap(&batch.type_ids),
        mask: swap(&batch.mask),
        ..batch.clone()
    }
}

#[test]
fn jitted_embeddings_equal_eager_ones() {
    let Some(dir) = common::model_dir().filter(|_| common::on_wgpu()) else { return };
    let model = SentenceEmbedder::load(&dir, DType::F32).unwrap();
    let a = model
        .tokenizer()
        .encode_batch(&["A man is eating food.", "The capital of France is Paris."])
        .unwrap();
    let b = swapped(&a);
    let eager = |batch: &TokenBatch| model.embed_tokens(batch).unwrap().to_vec::<f32>().unwrap();
    let (want_a, want_b) = (eager(&a), eager(&b));
    let mut jit = JitEmbedder::new(&model);
    // runs, captures, then replays with new ids swapped in
    for (i, (batch, want)) in
        [(&a, &want_a), (&b, &want_b), (&a, &want_a), (&b, &want_b)].into_iter().enumerate()
    {
        let got = jit.embed_tokens(batch).unwrap().to_vec::<f32>().unwrap();
        assert_eq!(&got, want, "call {i}");
    }
    let kernels = jit.kernels_per_forward().expect("captured");
    assert!((10..200).contains(&kernels), "{kernels} kernels per forward");
    let other = model.tokenizer().encode_batch(&["One sentence only."]).unwrap();
    let err = jit.embed_tokens(&other).expect_err("another shape is refused");
    assert!(matches!(err, ModelError::Tensor(TensorError::Jit(JitError::InputMismatch { .. }))), "{err}");
}
