//! A host the operator answers for. A confined command whose rule names hosts, and says
//! `"other_hosts": "prompt"`, asks its egress proxy for a host the rule does not name: the proxy holds the
//! connection and the operator is asked, with the rule and the host. The approval's action is a network
//! `connect` to `host:port` (so a "this session" grant covers that host for every command of the
//! session); "always" adds the host to that rule's `network` list in the rule's own file, as a small
//! splice of the text, and the next command the rule matches reaches the host without asking.

use crate::always_target::target_layer;
use crate::amendment::Amendment;
pub use crate::amendment::HostAddition;
use crate::document::{NetworkGrant, OtherHosts, PolicyDocument};
use crate::policy::Policy;
use crate::rule::NetworkScope;
use crate::splice::append_to_rule_array;
use portcullis_harness::{ApprovalRequest, DecidedBy, HostPattern};
pub use portcullis_harness::{asks_for_host, host_action};

/// What "always" writes for a host prompt: the host (with its port) added to the rule that asked, in
/// that rule's file; or why it is not offered (the rule is gone or changed, the host is not a name).
pub fn host_offer(policy: &Policy, request: &ApprovalRequest) -> Result<(String, Amendment), String> {
    let target = request.action.target.as_deref().ok_or("the prompt names no host")?;
    let pattern = HostPattern::parse(target).map_err(|why| format!("not a host a rule can name: {why}"))?;
    if target.starts_with('*') {
        return Err("a wildcard is not one host: always adds only the host asked for".into());
    }
    let DecidedBy::Rule { rule_id, source } = &request.verdict.decided_by else {
        return Err("the prompt names no rule to add the host to".into());
    };
    let rule = (policy.rules.iter())
        .find(|r| r.id == *rule_id && r.source == *source)
        .ok_or_else(|| format!("rule `{rule_id}` is no longer in {source}"))?;
    if !matches!(rule.network, NetworkScope::Hosts(_)) || rule.other_hosts != OtherHosts::Prompt {
        return Err(format!("rule `{rule_id}` no longer names hosts and asks for others"));
    }
    match target_layer(policy, source)? {
        (_, false) => {}
        (_, true) => return Err(format!("{source} is not a policy file")),
    }
    let host = pattern.to_string();
    Ok((
        source.clone(),
        Amendment { hosts: vec![HostAddition { rule: rule_id.clone(), host }], ..Amendment::default() },
    ))
}

/// Whether `rule` of `policy` names `target` (`host:port`): what the amended policy of a host prompt's
/// "always" must say.
pub fn names_host(policy: &Policy, rule: &portcullis_harness::RuleRef, target: &str) -> bool {
    let Some((host, port)) = target.rsplit_once(':').and_then(|(h, p)| Some((h, p.parse::<u16>().ok()?)))
    else {
        return false;
    };
    policy.rules.iter().any(|r| {
        r.id == rule.id
            && r.source == rule.source
            && matches!(&r.network, NetworkScope::Hosts(hosts) if hosts.iter().any(|h| h.matches(host, port)))
    })
}

/// The document with each host added to its rule's list (once).
pub(crate) fn add_hosts(document: &mut PolicyDocument, hosts: &[HostAddition]) {
    for addition in hosts {
        let rule = document.commands.rules.iter_mut().find(|r| r.id == addition.rule);
        if let Some(rule) = rule
            && let NetworkGrant::Hosts(list) = &mut rule.network
            && !list.contains(&addition.host)
        {
            list.push(addition.host.clone());
        }
    }
}

/// The text with each host appended to its rule's `network` array; `None` when a rule or array is not
/// there as expected (the caller then rewrites the whole file).
pub(crate) fn splice_hosts(text: &str, hosts: &[HostAddition]) -> Option<String> {
    let mut text = text.to_owned();
    for addition in hosts {
        let item = serde_json::to_string(&addition.host).ok()?;
        text = append_to_rule_array(&text, &addition.rule, "network", &[item])?;
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::append_amendment;
    use crate::layer::PolicyLayer;
    use portcullis_harness::{CallContext, PolicyVerdict};
    use std::sync::Arc;

    const TEXT: &str = "{\n  \"commands\": {\n    \"rules\": [\n      {\"id\": \"npm\", \"pattern\": [\"npm\"], \"decision\": \"allow\", \"network\": [\"registry.npmjs.org\"], \"other_hosts\": \"prompt\"},\n      {\"id\": \"curl\", \"pattern\": [\"curl\"], \"decision\": \"allow\", \"network\": [\"a.test\"]}\n    ]\n  }\n}\n";

    fn request(host: &str, port: u16, rule: &str, source: &str) -> ApprovalRequest {
        let call = CallContext {
            session_id: "s".into(),
            run_id: "r".into(),
            call_id: "c1".into(),
            owner: "agent".into(),
            cwd: None,
            mcp: None,
        };
        let verdict =
            PolicyVerdict::ask(DecidedBy::Rule { rule_id: rule.into(), source: source.into() }, "asks");
        ApprovalRequest {
            call: Arc::new(call),
            tool_name: "shell".into(),
            arguments: Arc::new(serde_json::json!({})),
            action: host_action(host, port),
            verdict,
        }
    }

    #[test]
    fn always_adds_the_host_with_its_port_to_the_rule_that_asked_and_nowhere_else() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("policy.json");
        std::fs::write(&file, TEXT).unwrap();
        let source = file.display().to_string();
        let layer = PolicyLayer::parse(&source, TEXT, dir.path().to_path_buf()).unwrap();
        let policy = Policy::from_layers(vec![layer]).unwrap();

        let (target, amendment) =
            host_offer(&policy, &request("paste.example", 443, "npm", &source)).unwrap();
        assert_eq!(target, source);
        assert_eq!(
            amendment.hosts,
            vec![HostAddition { rule: "npm".into(), host: "paste.example:443".into() }]
        );
        let (amended, written) = append_amendment(&policy, &source, &amendment).unwrap();
        assert_eq!(written[0].id, "npm");
        let on_disk = std::fs::read_to_string(&file).unwrap();
        assert!(
            on_disk.contains("\"network\": [\"registry.npmjs.org\", \"paste.example:443\"], \"other_hosts\""),
            "a small splice on the rule's line: {on_disk}"
        );
        assert_eq!(on_disk.lines().count(), TEXT.lines().count());
        let rule = amended.rules.iter().find(|r| r.id == "npm").unwrap();
        assert!(matches!(&rule.network, NetworkScope::Hosts(h) if h.len() == 2));
        let npm = portcullis_harness::RuleRef { id: "npm".into(), source: source.clone(), decision: None };
        assert!(
            names_host(&amended, &npm, "paste.example:443")
                && !names_host(&policy, &npm, "paste.example:443")
        );
        assert!(
            amended
                .rules
                .iter()
                .find(|r| r.id == "curl")
                .is_some_and(|r| r.network == policy.rules[1].network)
        );

        // Not offered: a rule that does not ask for other hosts, a rule that is gone, a raw address.
        for (host, rule) in
            [("b.test", "curl"), ("b.test", "pip"), ("10.0.0.1", "npm"), ("*.paste.example", "npm")]
        {
            assert!(host_offer(&amended, &request(host, 443, rule, &source)).is_err(), "{host} {rule}");
        }
    }
}
