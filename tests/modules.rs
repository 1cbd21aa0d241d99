//! The workspace stays easy to enter: in every crate the `crate::…` uses between
//! top-level modules form a DAG (no module circles), and `src/main.rs` only parses,
//! sets up logging and dispatches (at most 200 lines).

mod common;
use common::root;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Each top-level module of the crate rooted at `src` and the top-level modules it
/// names as `crate::…` (in its file, or every file of its folder).
fn module_uses(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut modules = BTreeMap::new();
    for e in std::fs::read_dir(src).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_stem().unwrap().to_string_lossy().to_string();
        if name == "lib" || name == "main" {
            continue;
        }
        let mut text = String::new();
        if p.is_dir() {
            let mut stack = vec![p.clone()];
            while let Some(d) = stack.pop() {
                for f in std::fs::read_dir(&d).unwrap() {
                    let f = f.unwrap().path();
                    if f.is_dir() {
                        stack.push(f);
                    } else if f.extension().is_some_and(|x| x == "rs") {
                        text += &std::fs::read_to_string(&f).unwrap();
                    }
                }
            }
        } else if p.extension().is_some_and(|x| x == "rs") {
            text = std::fs::read_to_string(&p).unwrap();
        } else {
            continue;
        }
        modules.insert(name, text);
    }
    let names: BTreeSet<String> = modules.keys().cloned().collect();
    modules
        .iter()
        .map(|(m, text)| {
            let used = text
                .match_indices("crate::")
                .filter_map(|(i, _)| {
                    let rest = &text[i + 7..];
                    let end = rest
                        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                        .unwrap_or(rest.len());
                    let n = &rest[..end];
                    (names.contains(n) && n != m).then(|| n.to_string())
                })
                .collect();
            (m.clone(), used)
        })
        .collect()
}

/// A circle among the modules, if there is one.
fn circle(uses: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        m: &str,
        uses: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|x| x == m) {
            let mut c = path[i..].to_vec();
            c.push(m.to_string());
            return Some(c);
        }
        if done.contains(m) {
            return None;
        }
        path.push(m.to_string());
        for n in uses.get(m).into_iter().flatten() {
            if let Some(c) = visit(n, uses, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(m.to_string());
        None
    }
    let mut done = BTreeSet::new();
    for m in uses.keys() {
        if let Some(c) = visit(m, uses, &mut Vec::new(), &mut done) {
            return Some(c);
        }
    }
    None
}

#[test]
fn no_crate_has_a_module_circle() {
    let r = root();
    let mut crates: Vec<_> = std::fs::read_dir(r.join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path().join("src"))
        .collect();
    crates.push(r.join("src"));
    crates.push(r.join("python/src"));
    for src in &crates {
        let uses = module_uses(src);
        assert!(!uses.is_empty(), "{}: no modules found", src.display());
        if let Some(c) = circle(&uses) {
            panic!(
                "{}: modules use each other in a circle: {}",
                src.display(),
                c.join(" -> ")
            );
        }
    }
    // The check itself finds a circle.
    let mut fake = BTreeMap::new();
    fake.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    fake.insert("b".to_string(), BTreeSet::from(["a".to_string()]));
    assert!(circle(&fake).is_some());
}

#[test]
fn main_only_parses_and_dispatches() {
    let main = std::fs::read_to_string(root().join("src/main.rs")).unwrap();
    let lines = main.lines().count();
    assert!(
        lines <= 200,
        "src/main.rs has {lines} lines: move a subcommand's work into its module"
    );
}
