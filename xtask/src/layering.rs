//! The layering rule: each wgrad crate depends only on crates below it in the stage order,
//! and the two runtimes never depend on each other.

use serde_json::Value;

/// The stages bottom-up; entries sharing a floor number are peers that may not depend on each other.
/// `wgrad-derive` is a proc-macro leaf: the code it generates names wgrad-tensor's items, but
/// the crate itself depends on no wgrad crate.
const FLOORS: [(&str, u32); 12] = [
    ("wgrad-derive", 0),
    ("wgrad-dtype", 0),
    ("wgrad-shape", 1),
    ("wgrad-ops", 2),
    ("wgrad-codegen", 3),
    ("wgrad-renderer-wgsl", 4),
    ("wgrad-runtime-cpu", 5),
    ("wgrad-runtime-wgpu", 5),
    ("wgrad-engine", 6),
    ("wgrad-tensor", 7),
    ("wgrad-models", 8),
    ("wgrad-conformance", 8),
];

fn floor(name: &str) -> Option<u32> {
    FLOORS.iter().find(|(n, _)| *n == name).map(|&(_, f)| f)
}

/// Dependency edges (crate, dependency) that break the rule, from `cargo metadata`.
pub fn violations() -> Result<Vec<String>, String> {
    let out = crate::cargo()
        .args(["metadata", "--no-deps", "--format-version", "1"])
        .output()
        .map_err(|e| format!("cannot run cargo metadata: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let meta: Value = serde_json::from_slice(&out.stdout).map_err(|e| format!("bad cargo metadata: {e}"))?;
    let mut bad = Vec::new();
    for pkg in meta["packages"].as_array().into_iter().flatten() {
        let name = pkg["name"].as_str().unwrap_or_default();
        let Some(mine) = floor(name) else { continue };
        for dep in pkg["dependencies"].as_array().into_iter().flatten() {
            let dep_name = dep["name"].as_str().unwrap_or_default();
            if let Some(theirs) = floor(dep_name)
                && dep_name != name
                && theirs >= mine
            {
                bad.push(format!("{name} -> {dep_name}"));
            }
        }
    }
    bad.sort();
    bad.dedup();
    Ok(bad)
}

/// `cargo xtask layering`: prints the verdict.
pub fn run() -> bool {
    match violations() {
        Ok(bad) if bad.is_empty() => {
            println!("layering: ok");
            true
        }
        Ok(bad) => {
            let order: Vec<&str> = FLOORS.iter().map(|(n, _)| *n).collect();
            println!("layering: these dependencies point up or sideways (order: {}):", order.join(" < "));
            bad.iter().for_each(|b| println!("  {b}"));
            false
        }
        Err(e) => {
            println!("layering: {e}");
            false
        }
    }
}
