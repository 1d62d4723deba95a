//! Naming: fresh names per prefix (`alu0`, `val1`, ...), and legal, unique identifiers for
//! names that come from outside (kernel, variables, workgroup buffers).

use std::collections::{HashMap, HashSet};

use crate::helpers::Helper;

/// Hands out names that are legal WGSL identifiers, unique within one shader.
pub(crate) struct Namer {
    taken: HashSet<String>,
    counters: HashMap<String, usize>,
}

impl Namer {
    /// A namer with the given names already taken.
    pub(crate) fn new(taken: impl IntoIterator<Item = String>) -> Namer {
        Namer { taken: taken.into_iter().collect(), counters: HashMap::new() }
    }

    /// The next free `{prefix}{n}`.
    pub(crate) fn fresh(&mut self, prefix: &str) -> String {
        let counter = self.counters.entry(prefix.to_string()).or_default();
        loop {
            let name = format!("{prefix}{counter}");
            *counter += 1;
            if !is_reserved(&name) && self.taken.insert(name.clone()) {
                return name;
            }
        }
    }

    /// `wanted` made a legal identifier (other characters become `_`), or a numbered variant
    /// of it when that is reserved or taken.
    pub(crate) fn claim(&mut self, wanted: &str) -> String {
        let mut name: String =
            wanted.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
        if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) || name.starts_with("__") {
            name = format!("k{name}");
        }
        if name != "_" && !is_reserved(&name) && self.taken.insert(name.clone()) {
            return name;
        }
        self.fresh(&format!("{name}_"))
    }
}

/// Whether `name` is a WGSL keyword or reserved word, a builtin this renderer calls, or one of
/// its helpers.
fn is_reserved(name: &str) -> bool {
    RESERVED.contains(&name) || BUILTINS.contains(&name) || Helper::is_name(name)
}

/// Builtin functions and types the generated code uses (a local of that name would shadow it).
const BUILTINS: &[&str] = &[
    "abs",
    "array",
    "arrayLength",
    "atomic",
    "atomicAnd",
    "atomicLoad",
    "atomicOr",
    "bitcast",
    "bool",
    "exp2",
    "f16",
    "f32",
    "firstLeadingBit",
    "countLeadingZeros",
    "ldexp",
    "frexp",
    "i32",
    "i64",
    "log2",
    "max",
    "min",
    "pack2x16float",
    "round",
    "select",
    "sin",
    "sqrt",
    "trunc",
    "u32",
    "u64",
    "unpack2x16float",
    "vec2",
    "vec3",
    "workgroupBarrier",
    "subgroupAdd",
    "subgroupMax",
    "subgroupMul",
    "wid",
    "lid",
    "nwg",
    "sg_id",
    "sg_lane",
    "n_sg",
    "lin",
    "vars",
    "TWO_OVER_PI",
];

/// WGSL keywords and reserved words (WGSL spec, sections 15.2 and 15.3).
const RESERVED: &[&str] = &[
    "alias",
    "break",
    "case",
    "const",
    "const_assert",
    "continue",
    "continuing",
    "default",
    "diagnostic",
    "discard",
    "else",
    "enable",
    "false",
    "fn",
    "for",
    "if",
    "let",
    "loop",
    "override",
    "requires",
    "return",
    "struct",
    "switch",
    "true",
    "var",
    "while",
    "NULL",
    "Self",
    "abstract",
    "active",
    "alignas",
    "alignof",
    "as",
    "asm",
    "asm_fragment",
    "async",
    "attribute",
    "auto",
    "await",
    "become",
    "cast",
    "catch",
    "class",
    "co_await",
    "co_return",
    "co_yield",
    "coherent",
    "column_major",
    "common",
    "compile",
    "compile_fragment",
    "concept",
    "const_cast",
    "consteval",
    "constexpr",
    "constinit",
    "crate",
    "debugger",
    "decltype",
    "delete",
    "demote",
    "demote_to_helper",
    "do",
    "dynamic_cast",
    "enum",
    "explicit",
    "export",
    "extends",
    "extern",
    "external",
    "fallthrough",
    "filter",
    "final",
    "finally",
    "friend",
    "from",
    "fxgroup",
    "get",
    "goto",
    "groupshared",
    "highp",
    "impl",
    "implements",
    "import",
    "inline",
    "instanceof",
    "interface",
    "layout",
    "lowp",
    "macro",
    "macro_rules",
    "match",
    "mediump",
    "meta",
    "mod",
    "module",
    "move",
    "mut",
    "mutable",
    "namespace",
    "new",
    "nil",
    "noexcept",
    "noinline",
    "nointerpolation",
    "non_coherent",
    "noncoherent",
    "noperspective",
    "null",
    "nullptr",
    "of",
    "operator",
    "package",
    "packoffset",
    "partition",
    "pass",
    "patch",
    "pixelfragment",
    "precise",
    "precision",
    "premerge",
    "priv",
    "protected",
    "pub",
    "public",
    "readonly",
    "ref",
    "regardless",
    "register",
    "reinterpret_cast",
    "require",
    "resource",
    "restrict",
    "self",
    "set",
    "shared",
    "sizeof",
    "smooth",
    "snorm",
    "static",
    "static_assert",
    "static_cast",
    "std",
    "subroutine",
    "super",
    "target",
    "template",
    "this",
    "thread_local",
    "throw",
    "trait",
    "try",
    "type",
    "typedef",
    "typeid",
    "typename",
    "typeof",
    "union",
    "unless",
    "unorm",
    "unsafe",
    "unsized",
    "use",
    "using",
    "varying",
    "virtual",
    "volatile",
    "wgsl",
    "where",
    "with",
    "writeonly",
    "yield",
];
