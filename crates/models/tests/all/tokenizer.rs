//! Tokenization of the 16 test sentences (empty, accents, CJK, emoji, punctuation, numbers,
//! scripts, whitespace, one over 256 tokens that truncates and one over 128 that does not)
//! against the ids of `tests/fixtures/minilm/tokens.json`.

use crate::common;

use wgrad_models::{SentenceConfig, Tokenizer};
use wgrad_tensor::DType;

fn tokenizer() -> Option<(Tokenizer, SentenceConfig)> {
    let dir = common::model_dir()?;
    let config = SentenceConfig::from_dir(&dir).unwrap();
    let tokenizer =
        Tokenizer::from_file(&dir.join("tokenizer.json"), config.max_seq_length, config.do_lower_case)
            .unwrap();
    Some((tokenizer, config))
}

#[test]
fn sentences_tokenize_as_the_reference() {
    let Some((tokenizer, config)) = tokenizer() else { return };
    let sentences = common::sentences();
    let reference = common::fixture("tokens.json");
    let want: Vec<Vec<u32>> = serde_json::from_value(reference["tokens"].clone()).unwrap();
    assert_eq!(want.len(), 16);
    for (text, want) in sentences.iter().zip(&want) {
        let got = tokenizer.encode_batch(&[text]).unwrap();
        assert_eq!(got.ids_of(0), &want[..], "{text:?} (reference: {})", reference["source"]);
    }
    let longest = want.iter().map(Vec::len).max().unwrap();
    assert_eq!(longest, config.max_seq_length, "the long sentence truncates to max_seq_length");
    assert!(
        want.iter().any(|w| w.len() > 128 && w.len() < longest),
        "one sentence over 128 tokens is kept whole"
    );
}

#[test]
fn a_batch_pads_to_its_longest_text() {
    let Some((tokenizer, _)) = tokenizer() else { return };
    let batch = tokenizer.encode_batch(&["", "Paris is the capital of France."]).unwrap();
    assert_eq!((batch.batch, batch.seq_len), (2, 9));
    assert_eq!(batch.ids_of(0), &[101, 102]);
    assert_eq!(&batch.ids[2..9], &[0; 7], "padded with [PAD]");
    assert_eq!(batch.mask, [[1, 1].as_slice(), &[0; 7], &[1; 9]].concat());
    assert_eq!(batch.type_ids, vec![0; 18]);
}

#[test]
fn a_batch_goes_to_the_device_as_int32_ids_and_a_bool_mask() {
    // no tokenizer needed: ids past i32's range wrap as `as i32` does
    let batch = wgrad_models::TokenBatch {
        ids: vec![101, 7592, u32::MAX, 102],
        type_ids: vec![0, 0, 1, 1],
        mask: vec![1, 1, 1, 0],
        batch: 2,
        seq_len: 2,
    };
    let (ids, types, mask) = batch.tensors().unwrap();
    assert_eq!((ids.dtype(), types.dtype(), mask.dtype()), (DType::I32, DType::I32, DType::BOOL));
    assert_eq!(ids.shape(), [2, 2]);
    assert_eq!(ids.to_vec::<i32>().unwrap(), [101, 7592, -1, 102]);
    assert_eq!(types.to_vec::<i32>().unwrap(), [0, 0, 1, 1]);
    assert_eq!(mask.to_vec::<bool>().unwrap(), [true, true, true, false]);
}
