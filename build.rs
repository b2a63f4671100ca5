//! Records the build's git revision for `INFO rlock` (`unknown` outside a git checkout), and
//! asks Cargo to run again when HEAD moves (a checkout, or a commit on the current branch).

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}

fn main() {
    let revision = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=RLOCK_GIT_REVISION={revision}");
    if let Some(git_dir) = git(&["rev-parse", "--git-dir"]) {
        let branch = git(&["symbolic-ref", "-q", "HEAD"]);
        let watched = ["HEAD", branch.as_deref().unwrap_or("HEAD"), "packed-refs"];
        // A path that does not exist would make Cargo run this on every build.
        for path in watched.map(|name| format!("{git_dir}/{name}")) {
            if std::path::Path::new(&path).exists() {
                println!("cargo:rerun-if-changed={path}");
            }
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
