//! Profiles: a TOML file whose keys are the long flags, turned into arguments placed before the
//! command line's own, so flags override profiles through one parser and one set of checks.

use std::path::{Path, PathBuf};

use crate::cli::{run_flags, FlagKind};

use super::error::ConfigError;

/// Where a profile named on the command line lives: a path as given, else `profiles/NAME.toml`
/// under the working directory or `/etc/hubload/profiles` (the container's copy).
pub fn locate(p: &Path) -> Result<PathBuf, ConfigError> {
    if p.is_file() {
        return Ok(p.to_path_buf());
    }
    let name = p.to_string_lossy();
    let file = if name.ends_with(".toml") {
        name.to_string()
    } else {
        format!("{name}.toml")
    };
    for dir in ["profiles", "/etc/hubload/profiles"] {
        let c = Path::new(dir).join(&file);
        if c.is_file() {
            return Ok(c);
        }
    }
    Err(ConfigError::Profile {
        path: p.display().to_string(),
        message: "no such file (looked in ./profiles and /etc/hubload/profiles too)".into(),
    })
}

/// Read a profile into `--flag=value` arguments.
pub fn to_args(path: &Path) -> Result<Vec<String>, ConfigError> {
    let err = |message: String| ConfigError::Profile {
        path: path.display().to_string(),
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
    let table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| err(e.message().replace('\n', " ")))?;
    let flags = run_flags();
    let mut args = Vec::new();
    for (key, value) in &table {
        let flag = key.replace('_', "-");
        if flag == "profile" {
            return Err(err("a profile cannot name another profile".into()));
        }
        let kind = flags
            .iter()
            .find(|(l, _)| *l == flag)
            .map(|(_, k)| *k)
            .ok_or_else(|| err(format!("unknown key `{key}`")))?;
        let scalar = |v: &toml::Value| -> Result<String, ConfigError> {
            match v {
                toml::Value::String(s) => Ok(s.clone()),
                toml::Value::Integer(i) => Ok(i.to_string()),
                toml::Value::Float(f) => Ok(f.to_string()),
                _ => Err(err(format!("`{key}` must be a string or a number"))),
            }
        };
        match (kind, value) {
            (FlagKind::Switch, toml::Value::Boolean(true)) => args.push(format!("--{flag}")),
            (FlagKind::Switch, toml::Value::Boolean(false)) => {}
            (FlagKind::Switch, _) => return Err(err(format!("`{key}` must be true or false"))),
            (FlagKind::Repeated, toml::Value::Array(items)) => {
                for v in items {
                    args.push(format!("--{flag}={}", scalar(v)?));
                }
            }
            (_, toml::Value::Array(items)) => {
                let parts: Result<Vec<String>, _> = items.iter().map(scalar).collect();
                args.push(format!("--{flag}={}", parts?.join(",")));
            }
            (_, v) => args.push(format!("--{flag}={}", scalar(v)?)),
        }
    }
    Ok(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(text: &str) -> tempfile::NamedTempFile {
        let f = tempfile::Builder::new().suffix(".toml").tempfile().unwrap();
        std::fs::write(f.path(), text).unwrap();
        f
    }

    #[test]
    fn keys_become_flags() {
        let f = write(
            "tenants = 100\nconcurrency = [1, 20, 50]\nduration = \"10s\"\nhub_url = \"http://127.0.0.1:1/hub\"\nderegister = true\nquiet = false\nthreshold = [\"p99<300ms\", \"errors<1%\"]\n",
        );
        let args = to_args(f.path()).unwrap();
        for want in [
            "--tenants=100",
            "--concurrency=1,20,50",
            "--duration=10s",
            "--hub-url=http://127.0.0.1:1/hub",
            "--deregister",
            "--threshold=p99<300ms",
            "--threshold=errors<1%",
        ] {
            assert!(args.contains(&want.to_string()), "{want} not in {args:?}");
        }
        assert!(!args.iter().any(|a| a.contains("quiet")));
    }

    #[test]
    fn unknown_keys_and_bad_types_are_one_line_errors() {
        for (text, msg) in [
            ("tenents = 3", "unknown key `tenents`"),
            ("deregister = 3", "`deregister` must be true or false"),
            (
                "tenants = { a = 1 }",
                "`tenants` must be a string or a number",
            ),
            ("tenants = ", "profile"),
        ] {
            let f = write(text);
            let e = to_args(f.path()).unwrap_err().to_string();
            assert!(e.contains(msg), "{text}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }
}
