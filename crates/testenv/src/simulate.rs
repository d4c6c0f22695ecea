//! Running `simulate` (ours, or anything with its command line, such as the oracle) on an
//! input file and reading its JSON result array (the contract of `docs/simulate.md`).

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// `BIN simulate -f FILE EXTRA... -o json`: the result array, or why there is none.
pub fn run_json(bin: &Path, file: &Path, extra: &[String]) -> Result<Vec<Value>, String> {
    let out = Command::new(bin)
        .arg("simulate")
        .arg("-f")
        .arg(file)
        .args(extra)
        .args(["-o", "json"])
        .output()
        .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
    match serde_json::from_slice::<Value>(&out.stdout) {
        Ok(Value::Array(a)) => Ok(a),
        _ => Err(format!(
            "{} on {} did not print a JSON array (exit {:?}); stderr:\n{}",
            bin.display(),
            file.display(),
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        )),
    }
}
