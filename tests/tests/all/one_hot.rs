//! The word embedding kernel of all-MiniLM-L6-v2 (30522 x 384) as the Tensor front end schedules
//! it: the heuristics plan it as the elementwise kernel it becomes (no unroll or group on the
//! vocabulary), and its program has no loop over the vocabulary: one gated load per element.

use wgrad_codegen::{OptMode, OptOps, Target, compile};
use wgrad_conformance::one_hot::minilm_embedding;
use wgrad_ops::Ops;

#[test]
fn minilm_word_embedding_is_one_gated_load_per_element() {
    let targets =
        [Target::generic_gpu(), Target { parallelism: 1 << 8, ..Target::generic_gpu() }, Target::no_locals()];
    for tokens in [16, 16384] {
        let case = minilm_embedding(tokens);
        for target in &targets {
            let label = format!("{tokens} tokens on {} wanting {} threads", target.name, target.parallelism);
            let (k, program) = compile(&case.ast, target, &OptMode::Heuristic, "k").unwrap();
            let reduce_opts = [OptOps::Unroll, OptOps::Group, OptOps::Grouptop];
            assert!(
                !k.applied_opts().iter().any(|o| reduce_opts.contains(&o.op)),
                "{label}: {}",
                k.describe_opts()
            );
            let uops = &program.uops;
            assert!(
                !uops.iter().any(|u| matches!(u.op(), Ops::DefineAcc | Ops::DefineLocal)),
                "{label}\n{program}"
            );
            let vocab_loop =
                uops.iter().any(|u| u.op() == Ops::Range && u.src()[0].const_int() == Some(30522));
            assert!(!vocab_loop, "{label}\n{program}");
            let gated = uops.iter().filter(|u| u.op() == Ops::Index && u.src().len() == 3).count();
            assert!(gated >= 1, "{label}: the table's loads are gated\n{program}");
        }
    }
}
