//! Users of `strata serve` and their SCRAM-SHA-256 credentials.
//!
//! The users file holds one `name:password` per line (blank lines and
//! lines starting with `#` are skipped). It must not be readable by group
//! or others, as PostgreSQL requires of its key files. At start, each
//! password is salted with a random salt and hashed (PBKDF2, 4096
//! iterations); only the salted hashes stay in memory.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;

use async_trait::async_trait;
use datafusion_postgres::pgwire::api::auth::sasl::scram::gen_salted_password;
use datafusion_postgres::pgwire::api::auth::{AuthSource, LoginInfo, Password};
use datafusion_postgres::pgwire::error::{ErrorInfo, PgWireError, PgWireResult};

/// SCRAM's PBKDF2 iterations (PostgreSQL's default).
pub(crate) const SCRAM_ITERATIONS: usize = 4096;

/// The users a server accepts.
#[derive(Clone)]
pub struct Users {
    /// Name → (salt, salted password).
    entries: HashMap<String, (Vec<u8>, Vec<u8>)>,
}

impl fmt::Debug for Users {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<&String> = self.entries.keys().collect();
        names.sort();
        f.debug_struct("Users").field("names", &names).finish()
    }
}

impl Users {
    /// Reads a users file; an error says which line is wrong.
    pub fn load(path: &Path) -> Result<Users, String> {
        let shown = path.display();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let meta = std::fs::metadata(path).map_err(|e| format!("{shown}: {e}"))?;
            if meta.permissions().mode() & 0o077 != 0 {
                return Err(format!(
                    "{shown} is readable by group or others; chmod 600 it (it holds passwords)"
                ));
            }
        }
        let text = std::fs::read_to_string(path).map_err(|e| format!("{shown}: {e}"))?;
        Users::parse(&text).map_err(|e| format!("{shown}: {e}"))
    }

    /// Parses `name:password` lines.
    pub fn parse(text: &str) -> Result<Users, String> {
        let mut entries = HashMap::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim_end_matches('\r');
            if line.trim().is_empty() || line.trim_start().starts_with('#') {
                continue;
            }
            let Some((name, password)) = line.split_once(':') else {
                return Err(format!("line {}: expected name:password", n + 1));
            };
            if name.is_empty() || password.is_empty() {
                return Err(format!("line {}: empty name or password", n + 1));
            }
            let salt: [u8; 16] = rand::random();
            let salted = gen_salted_password(password, &salt, SCRAM_ITERATIONS);
            if entries
                .insert(name.to_string(), (salt.to_vec(), salted))
                .is_some()
            {
                return Err(format!("line {}: user {name:?} appears twice", n + 1));
            }
        }
        if entries.is_empty() {
            return Err("no users".into());
        }
        Ok(Users { entries })
    }
}

#[async_trait]
impl AuthSource for Users {
    async fn get_password(&self, login: &LoginInfo) -> PgWireResult<Password> {
        let user = login.user().unwrap_or("");
        match self.entries.get(user) {
            Some((salt, salted)) => Ok(Password::new(Some(salt.clone()), salted.clone())),
            None => Err(PgWireError::UserError(Box::new(ErrorInfo::new(
                "FATAL".into(),
                "28P01".into(),
                format!("password authentication failed for user \"{user}\""),
            )))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn users_files() {
        let u = Users::parse("# admins\nada:secret\n\ngrace:pa:ss\n").expect("parse");
        assert_eq!(u.entries.len(), 2);
        // A password may hold colons; the salt differs per user.
        assert_ne!(u.entries["ada"].0, u.entries["grace"].0);
        assert!(Users::parse("ada\n").is_err());
        assert!(Users::parse("ada:x\nada:y\n").is_err());
        assert!(Users::parse("# nobody\n").is_err());
    }
}
