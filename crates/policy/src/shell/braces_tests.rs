//! Brace expansion checked against the bash on this machine: a table of forms, and random words.

use super::*;

/// The words bash makes of each of `words` (unquoted, with pathname expansion off), one list per word.
fn bash_expands(words: &[&str]) -> Vec<Vec<String>> {
    let mut script =
        String::from("set -f\nf() { for a; do printf '%s\\0' \"$a\"; done; printf '\\1\\0'; }\n");
    for word in words {
        script.push_str(&format!("f {word}\n"));
    }
    let out = std::process::Command::new("bash").arg("--norc").arg("-c").arg(&script).output().unwrap();
    assert!(out.status.success(), "bash failed: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lists = vec![Vec::new()];
    for item in text.split('\0') {
        if item == "\u{1}" {
            lists.push(Vec::new());
        } else if let Some(last) = lists.last_mut() {
            last.push(item.to_owned());
        }
    }
    lists.truncate(words.len());
    lists
}

const FORMS: &[&str] = &[
    "{--pre,sh}",
    "-ex{ec,}",
    "{rm,-rf,x}",
    "a{b,c}d",
    "a{b,c}{d,e}f",
    "{a,{b,c}}",
    "{a{b,c}}",
    "{a}b,c}",
    "{a}",
    "{}",
    "x{}",
    "{,}",
    "{a,}",
    "\\{a,b}",
    "{a\\,b}",
    "{a,b\\}",
    "{1..3}",
    "{3..1}",
    "{1..10..3}",
    "{10..1..-4}",
    "{01..10}",
    "{-05..5..5}",
    "{a..e}",
    "{e..a..2}",
    "{a..5}",
    "{1..}",
    "{..1}",
    "{1..3}{a,b}",
    "x{1..2}y{a..b}z",
    "{1..3.5}",
    "{1..3..}",
    "--out{put,}=f",
    "{-C,/tmp}",
    "{{a,b}",
    "{a,b}}",
    "a{,b}{,c}",
    "}{a,b}{",
];

#[test]
fn forms_expand_as_bash_expands_them() {
    let expected = bash_expands(FORMS);
    for (word, bash) in FORMS.iter().zip(expected) {
        let ours = expand_unquoted(word);
        assert_eq!(ours.as_ref(), Some(&bash), "{word}");
    }
}

#[test]
fn random_words_expand_as_bash_expands_them_or_are_unsure() {
    // A fixed-seed generator: the same words every run.
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    const ALPHABET: &[&str] = &["{", "}", ",", ".", "..", "a", "b", "1", "0", "-", "\\,", "\\{", "z"];
    let words: Vec<String> =
        (0..600).map(|_| (0..1 + next(12)).map(|_| ALPHABET[next(ALPHABET.len())]).collect()).collect();
    let refs: Vec<&str> = words.iter().map(String::as_str).collect();
    let expected = bash_expands(&refs);
    let mut compared = 0;
    for (word, bash) in refs.iter().zip(expected) {
        if let Some(ours) = expand_unquoted(word) {
            assert_eq!(ours, bash, "{word}");
            compared += 1;
        }
    }
    assert!(compared > 500, "only {compared} of 600 words were sure");
}

#[test]
fn too_large_or_too_deep_is_unsure() {
    assert!(expand_unquoted("{1..100000}").is_none());
    assert!(expand_unquoted(&"{a,b}".repeat(11)).is_none());
    assert!(expand_unquoted(&"{1..1}".repeat(200)).is_none());
    assert!(expand_unquoted(&"{".repeat(5000)).is_none());
    assert!(expand_unquoted("{Z..a}").is_none());
}
