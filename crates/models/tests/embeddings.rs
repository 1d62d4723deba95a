//! all-MiniLM-L6-v2 embeddings of the 16 test sentences against the reference in
//! `tests/fixtures/minilm` (each file names its source: today a float64 numpy BERT,
//! `make_numpy_reference.py`; PyTorch's own once `make_reference.py` has run on the GPU machine).

mod common;

use std::time::Instant;

use wgrad_models::SentenceEmbedder;
use wgrad_tensor::DType;

fn check(dtype: DType, file: &str, atol: f32) {
    let Some(dir) = common::model_dir() else { return };
    let t = Instant::now();
    let model = SentenceEmbedder::load(&dir, dtype).unwrap();
    eprintln!("load {:?}", t.elapsed());
    let sentences = common::sentences();
    let texts: Vec<&str> = sentences.iter().map(String::as_str).collect();
    let t = Instant::now();
    let got = model.embed_all(&texts, 4).unwrap();
    eprintln!("embed {:?}", t.elapsed());
    let reference = common::fixture(file);
    let want: Vec<Vec<f32>> = serde_json::from_value(reference["embeddings"].clone()).unwrap();
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let worst = g.iter().zip(w).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
        eprintln!("{i}: {worst}");
        assert!(
            worst <= atol,
            "sentence {i} {:?}: off by {worst} > {atol} from {}",
            texts[i],
            reference["source"]
        );
    }
}

#[test]
fn f32_embeddings_match_the_reference() {
    check(DType::F32, "embeddings_f32.json", 1e-4);
}

#[test]
fn f16_embeddings_match_the_reference() {
    check(DType::F16, "embeddings_f16.json", 2e-3);
}
