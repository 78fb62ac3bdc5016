//! The rights of the emulator's SAS key, as an Azure shared access policy grants them: Send,
//! Listen and Manage, where Manage needs the other two (the portal refuses Manage alone).
//! A token signed with the key carries the key's rights; a link or request that needs a
//! right the key lacks is refused with Azure's wording.

use std::fmt;

/// What a policy may do. [`Rights::ALL`] unless the emulator is told otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rights {
    /// Attach a sender to a queue or topic.
    pub send: bool,
    /// Attach a receiver to a queue or subscription.
    pub listen: bool,
    /// Use the administration API (create, read, delete entities).
    pub manage: bool,
}

/// One right, for the refusal's wording.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Right {
    /// `Send`.
    Send,
    /// `Listen`.
    Listen,
    /// `Manage`.
    Manage,
}

impl fmt::Display for Right {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Right::Send => "Send",
            Right::Listen => "Listen",
            Right::Manage => "Manage",
        })
    }
}

impl Rights {
    /// Send, Listen and Manage: the emulator's default (a `RootManageSharedAccessKey`).
    pub const ALL: Rights = Rights {
        send: true,
        listen: true,
        manage: true,
    };

    /// From a comma-separated list of `send`, `listen`, `manage` (any case). Manage without
    /// Send and Listen is refused, as the portal refuses it.
    pub fn parse(s: &str) -> Result<Rights, String> {
        let mut r = Rights {
            send: false,
            listen: false,
            manage: false,
        };
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            match part.to_ascii_lowercase().as_str() {
                "send" => r.send = true,
                "listen" => r.listen = true,
                "manage" => r.manage = true,
                other => return Err(format!("`{other}` is not send, listen or manage")),
            }
        }
        if r.manage && !(r.send && r.listen) {
            return Err("manage needs send and listen too (as Azure's policies do)".into());
        }
        if !(r.send || r.listen) {
            return Err("names no right (give send, listen and/or manage)".into());
        }
        Ok(r)
    }

    /// Whether the policy has `right`.
    pub fn has(&self, right: Right) -> bool {
        match right {
            Right::Send => self.send,
            Right::Listen => self.listen,
            Right::Manage => self.manage,
        }
    }
}

impl Default for Rights {
    fn default() -> Self {
        Rights::ALL
    }
}

/// Azure's description of a refusal for a missing right on `resource`.
pub fn denial(right: Right, resource: &str) -> String {
    format!(
        "Unauthorized access. '{right}' claim(s) are required to perform this operation. Resource: '{resource}'."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lists_and_refuses_what_azure_refuses() {
        let r = Rights::parse("Send").unwrap();
        assert!(r.has(Right::Send) && !r.has(Right::Listen) && !r.has(Right::Manage));
        let r = Rights::parse("listen, send").unwrap();
        assert!(r.send && r.listen && !r.manage);
        assert_eq!(Rights::parse("send,listen,manage").unwrap(), Rights::ALL);
        assert_eq!(
            Rights::parse("manage").unwrap_err(),
            "manage needs send and listen too (as Azure's policies do)"
        );
        assert_eq!(
            Rights::parse("read").unwrap_err(),
            "`read` is not send, listen or manage"
        );
        assert!(Rights::parse(" , ").is_err());
    }

    #[test]
    fn the_denial_is_azures_wording() {
        assert_eq!(
            denial(Right::Listen, "sb://h/t/subscriptions/s"),
            "Unauthorized access. 'Listen' claim(s) are required to perform this operation. Resource: 'sb://h/t/subscriptions/s'."
        );
    }
}
