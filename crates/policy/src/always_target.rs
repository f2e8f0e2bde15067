//! Where "always" writes. A loaded policy file takes the rule (the first one: layering is
//! strictest-wins, so only the base layer can widen what the policy allows). On a first day no file is
//! loaded — the built-in default is in force — and "always" creates the user's policy file: the built-in
//! default's rules plus the new one, so the operator's most useful answer is there from the start.

use crate::discovery::DEFAULT_POLICY_SOURCE;
use crate::layer::PolicyLayer;
use crate::policy::Policy;
use std::path::Path;

/// Where "always" writes, and whether writing creates that file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlwaysTarget {
    pub file: String,
    /// The file is not a loaded layer: "always" creates it from the built-in default (a first day).
    pub creates: bool,
}

impl AlwaysTarget {
    /// A loaded policy file "always" appends to.
    pub fn loaded(file: String) -> Self {
        AlwaysTarget { file, creates: false }
    }
}

/// Where "always" writes for `policy`: its first layer loaded from a file, else (the built-in default
/// alone in force) the user's policy file in the user's config folder `config`, which "always" creates;
/// `None` when there is no config folder to put it in.
pub fn always_target(policy: &Policy, config: Option<&Path>) -> Option<AlwaysTarget> {
    let sources: Vec<String> = policy.layers().iter().map(|l| l.source.clone()).collect();
    if let Some(file) = default_always_file(&sources) {
        return Some(AlwaysTarget::loaded(file));
    }
    let first_day = sources.iter().all(|s| s == DEFAULT_POLICY_SOURCE);
    let file = config.filter(|_| first_day)?.join("policy.json");
    let file = std::path::absolute(&file).unwrap_or(file).display().to_string();
    Some(AlwaysTarget { file, creates: true })
}

/// The file "always" appends to among `sources`: the first loaded policy that is a file.
pub fn default_always_file(sources: &[String]) -> Option<String> {
    sources.iter().find(|s| Path::new(s).is_file()).cloned()
}

/// Which layer of `policy` the rule for `target_source` goes into, and whether writing it creates the
/// file: the layer loaded from it, or — the built-in default the only layer, `target_source` an absent
/// file (the user's policy file [`always_target`] named) — the default's layer, which becomes that file.
pub(crate) fn target_layer(policy: &Policy, target_source: &str) -> Result<(usize, bool), String> {
    if let Some(index) = policy.layers().iter().position(|l| l.source == target_source) {
        return Ok((index, false));
    }
    let creates = matches!(policy.layers(), [only] if only.source == DEFAULT_POLICY_SOURCE)
        && Path::new(target_source).is_absolute()
        && !Path::new(target_source).exists();
    if creates {
        Ok((0, true))
    } else {
        Err(format!("{target_source} is not one of the loaded policy files"))
    }
}

/// The built-in default's layer as the user's policy file `file`: the default's text without its
/// `$schema` (a path relative to the repository's copy), its "." still the project it is applied to.
pub(crate) fn as_user_file(layer: &mut PolicyLayer, file: &str) {
    let text = layer.text.take().unwrap_or_default();
    let without_schema: String = text.lines().filter(|l| !l.trim_start().starts_with("\"$schema\"")).fold(
        String::with_capacity(text.len()),
        |mut out, line| {
            out.push_str(line);
            out.push('\n');
            out
        },
    );
    layer.text = Some(without_schema);
    layer.document.schema = None;
    layer.source = file.to_owned();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discovery::DEFAULT_POLICY;

    #[test]
    fn the_user_copy_of_the_default_is_the_default_without_its_schema() {
        let mut layer = PolicyLayer::parse(DEFAULT_POLICY_SOURCE, DEFAULT_POLICY, "/srv/app".into()).unwrap();
        let document = layer.document.clone();
        as_user_file(&mut layer, "/home/u/.config/portcullis/policy.json");
        let text = layer.text.clone().unwrap();
        assert!(!text.contains("$schema"), "{text}");
        let reread = PolicyLayer::parse("x", &text, "/srv/app".into()).unwrap();
        assert_eq!(reread.document, layer.document);
        assert_eq!(crate::document::PolicyDocument { schema: None, ..document }, layer.document);
        assert_eq!(layer.source, "/home/u/.config/portcullis/policy.json");
    }
}
