//! Literal variables checked row by row, and against the bash on this machine: every word the judge
//! resolves must be the word bash passes.

use super::*;
use crate::shell::{OpaqueKind, ShellAnalysis, analyze};

/// What the judge must make of the words of the last `printf` of a row.
#[derive(Debug)]
enum Expect {
    /// Resolved to exactly these words (checked against bash too).
    Words(&'static [&'static str]),
    /// Left computed at run time.
    Dynamic,
    /// Some construct is opaque (whatever the words).
    Opaque,
}

use Expect::{Dynamic, Opaque, Words};

/// One row per form: the statements before `printf '%s\0' WORDS`, the words, and the verdict.
const ROWS: &[(&str, &str, Expect)] = &[
    ("LOGS_DIR=logs;", r#""$LOGS_DIR/a.log""#, Words(&["logs/a.log"])),
    ("x=a;", r#""$x" $x ${x} "${x}""#, Words(&["a", "a", "a", "a"])),
    ("x=/etc;", "$x/passwd", Words(&["/etc/passwd"])),
    ("x=a; x=b;", "$x", Words(&["b"])),
    ("x=a &&", "$x", Words(&["a"])),
    ("x=a y=b;", "$x$y-${y}", Words(&["ab-b"])),
    ("x=-rf;", "$x", Words(&["-rf"])),
    ("x='a b';", r#""$x""#, Words(&["a b"])),
    ("x=;", r#""$x""#, Words(&[""])),
    ("x=\"logs\";", "$x", Words(&["logs"])),
    ("x=$'logs';", "$x", Words(&["logs"])),
    ("x=a; y=$x;", "$x", Words(&["a"])),
    ("x=a;", "'$x'", Words(&["$x"])),
    ("x=a; cat \"$x\"; x=b;", "$x", Words(&["b"])),
    // Not a plain literal.
    ("x=$(echo a);", "$x", Dynamic),
    ("x=a; y=$x;", "$y", Dynamic),
    ("x=a; x+=b;", "$x", Dynamic),
    ("x=(a b);", "$x", Dynamic),
    ("x=a; x[1]=b;", "$x", Dynamic),
    // Unquoted, bash splits, globs or drops the value.
    ("x='a b';", "$x", Dynamic),
    ("x='*';", r#""$x" $x"#, Dynamic),
    ("x=;", "$x", Dynamic),
    ("x=~;", "$x", Dynamic),
    ("x='{a,b}';", r#""$x""#, Dynamic),
    // Braces are expanded before the value is read, and may continue the name.
    ("x=a;", "$x{1,2}", Dynamic),
    ("x=a;", "{$x,y}z", Dynamic),
    ("x=a;", "${x}{1,2} {${x},y}z", Words(&["a1", "a2", "az", "yz"])),
    // A byte past ASCII may continue the name in some locales.
    ("x=a;", "$xé", Dynamic),
    ("x=a;", "${x}é", Words(&["aé"])),
    // A tilde is read before the value is there.
    ("x=a;", "~$x/.ssh", Dynamic),
    ("x=a;", r#""~$x""#, Dynamic),
    // Other assignments, anywhere, leave the name computed at run time.
    ("x=a; f(){ x=b; }; f;", "$x", Opaque),
    ("x=a; { x=b; } | cat;", "$x", Dynamic),
    ("x=a; (x=b);", "$x", Dynamic),
    ("x=a; echo \"$(x=b)\";", "$x", Dynamic),
    ("x=a; read x < /dev/null;", "$x", Dynamic),
    ("x=a; unset x;", "$x", Dynamic),
    ("x=a; export x;", "$x", Dynamic),
    ("x=a; declare -l x;", "$x", Dynamic),
    ("x=a; if true; then x=b; fi;", "$x", Dynamic),
    ("x=a; for i in 1; do x=b; done;", "$x", Dynamic),
    ("x=a; for x in b; do :; done;", "$x", Dynamic),
    ("x=a; true || x=b;", "$x", Dynamic),
    ("x=a; true && x=b;", "$x", Dynamic),
    ("x=a & wait;", "$x", Dynamic),
    ("x=a; x=b & wait;", "$x", Dynamic),
    ("x=a; : ${x:=b};", "$x", Dynamic),
    ("x=a; : $((x = 1));", "$x", Dynamic),
    ("x=a; printf -v x b;", "$x", Dynamic),
    ("x=a; mapfile x < /dev/null;", "$x", Dynamic),
    ("x=a; getopts a x;", "$x", Dynamic),
    ("p=x; x=a; printf -v \"$p\" b;", "$x", Dynamic),
    ("x=a; bash -c 'x=b';", "$x", Dynamic),
    ("x=a; : \"${x/a/b}\";", "$x", Dynamic),
    ("x=a; # x names the folder\n", "$x", Dynamic),
    ("x=a; cat <<'EOF'\n$x\nEOF\n", "$x", Dynamic),
    ("cat <<EOF\n$x\nEOF\nx=a;", "$x", Dynamic),
    ("X=1 true;", "$X", Dynamic),
    // Read before the assignment: the value comes from elsewhere.
    (": \"$x\"; x=a;", "$x", Words(&["a"])),
    ("", "$x", Dynamic),
    // A name built from other variables: the walk sees the assignment and the script is opaque.
    ("LOGS=logs; p=LO; printf -v \"${p}GS\" /etc;", r#""$LOGS""#, Opaque),
    ("LOGS=logs; p=LO; unset \"${p}GS\";", r#""$LOGS""#, Opaque),
    ("LOGS=logs; p=LO; read \"${p}GS\" < /dev/null;", r#""$LOGS""#, Opaque),
    ("LOGS=logs; p=LO; declare \"${p}GS=/etc\";", r#""$LOGS""#, Opaque),
    // Bash's own variables and the inherited ones are never resolved.
    ("PATH=/tmp/evil;", "$PATH", Opaque),
    ("IFS=:;", "$IFS", Opaque),
    ("RANDOM=5;", "$RANDOM", Opaque),
    ("SECONDS=5;", "$SECONDS", Opaque),
    ("TMPDIR=/tmp/x;", "$TMPDIR", Opaque),
    ("LC_PAPER=x;", "$LC_PAPER", Opaque),
];

fn last_printf(analysis: &ShellAnalysis) -> Option<&crate::shell::SimpleCommand> {
    analysis.commands.iter().rev().find(|c| c.program == "printf")
}

fn bash_words(script: &str) -> Vec<String> {
    let out = std::process::Command::new("bash").arg("--norc").arg("-c").arg(script).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let mut words: Vec<String> = text.split('\0').map(str::to_owned).collect();
    words.pop();
    words
}

#[test]
fn each_row_resolves_as_bash_does_or_stays_dynamic() {
    for (before, words, expect) in ROWS {
        let script = format!("{before} printf '%s\\0' {words}");
        let analysis = analyze(&script);
        let printf = last_printf(&analysis);
        let argv = printf.map(|c| c.argv.get(2..).unwrap_or_default().to_vec()).unwrap_or_default();
        match expect {
            Words(expected) => {
                assert!(analysis.opaque.is_empty(), "{script:?}: {:?}", analysis.opaque);
                assert!(printf.is_some_and(|c| !c.dynamic), "{script:?}: {printf:?}");
                assert_eq!(argv, *expected, "{script:?}");
                assert_eq!(bash_words(&script), *expected, "{script:?}: bash");
            }
            Dynamic => {
                assert!(printf.is_some_and(|c| c.dynamic), "{script:?}: {printf:?}");
            }
            Opaque => {
                assert!(!analysis.opaque.is_empty(), "{script:?}: nothing opaque");
            }
        }
    }
}

#[test]
fn a_resolved_word_is_judged_where_it_stands() {
    // `cd`'s folder, a redirection's target, a command name, a file operand.
    let a = analyze(r#"x=a; cd "$x""#);
    assert_eq!(a.commands[0].argv, ["cd", "a"]);
    let a = analyze(r#"OUT=target/report.txt; cargo test > "$OUT""#);
    assert_eq!(a.redirections[0].target, "target/report.txt");
    assert!(!a.redirections[0].dynamic);
    let a = analyze("c=ls; $c -la");
    assert!(a.opaque.iter().all(|o| o.kind != OpaqueKind::DynamicCommandName), "{:?}", a.opaque);
    assert_eq!(a.commands[0].program, "ls");
    let a = analyze(r#"D=/etc; cat "$D/passwd""#);
    assert_eq!(a.commands[0].files[0].path, "/etc/passwd");
    assert!(!a.commands[0].files[0].dynamic);
    // A `bash -c` string is another shell: it sees only exported variables.
    let a = analyze(r#"x=a; bash -c 'cat $x'"#);
    assert!(a.commands.iter().any(|c| c.program == "cat" && c.dynamic), "{:?}", a.commands);
    // A double-quoted one is expanded by this shell first.
    let a = analyze(r#"x=a; bash -c "cat $x""#);
    assert!(a.commands.iter().any(|c| c.argv == ["cat", "a"]), "{:?}", a.commands);
}

#[test]
fn names_are_counted_whole() {
    assert_eq!(mentions("x=a; xx=$x; echo ${x}x $x_y", "x"), 4);
    assert_eq!(mentions("LOGS=1 LOGS_DIR=2", "LOGS"), 1);
    assert_eq!(mentions("", "x"), 0);
}
