//! The program table's rows (`shell/program_specs*.rs`, `shell/file_operands.rs`), one test row each:
//! the files a command names through its operands and options, with what it does to them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{clean, kinds};
use portcullis_policy::shell::{FileRole, OpaqueKind};

/// `r` read, `w` written, `x` code runs there; a trailing `*` is a whole tree.
fn files(script: &str) -> Vec<String> {
    let a = clean(script);
    a.commands
        .iter()
        .flat_map(|c| c.files.iter())
        .map(|f| {
            let role = match f.role {
                FileRole::Read => "r",
                FileRole::Write => "w",
                FileRole::RunsCode => "x",
            };
            format!("{role} {}{}", f.path, if f.recursive { " *" } else { "" })
        })
        .collect()
}

#[test]
fn each_row_names_its_files() {
    let rows: &[(&str, &[&str])] = &[
        ("cat ~/.ssh/id_rsa", &["r ~/.ssh/id_rsa"]),
        ("cat -n -- -a b", &["r -a", "r b"]),
        ("head -n 5 a b", &["r a", "r b"]),
        ("tail -f /var/log/syslog", &["r /var/log/syslog"]),
        ("wc -l --files0-from=list x", &["r list", "r x"]),
        ("ls", &["r ."]),
        ("ls -R ~/.ssh", &["r ~/.ssh *"]),
        ("grep password f", &["r f"]),
        ("grep -r password ~", &["r ~ *"]),
        ("grep -r password", &["r . *"]),
        ("grep -f pats -e x a", &["r pats", "r a"]),
        ("egrep x a", &["r a"]),
        ("rg secret /", &["r / *"]),
        ("rg --files src", &["r src *"]),
        ("ag x dir", &["r dir *"]),
        ("diff /etc/passwd x", &["r /etc/passwd", "r x"]),
        ("diff -r a b", &["r a *", "r b *"]),
        ("cmp a b", &["r a", "r b"]),
        ("comm -12 a b", &["r a", "r b"]),
        ("cut -d, -f1 a", &["r a"]),
        ("sort -o out in", &["r in"]),
        ("uniq in out", &["r in", "w out"]),
        ("uniq a*.txt", &["r a*.txt", "w a*.txt"]),
        ("stat a", &["r a"]),
        ("nl -ba a", &["r a"]),
        ("od -An -tx1 -N4 a", &["r a"]),
        ("base64 -w0 a", &["r a"]),
        ("tac a b", &["r a", "r b"]),
        ("fold -w 80 a", &["r a"]),
        ("paste -d, a b", &["r a", "r b"]),
        ("fmt -72 a", &["r a"]),
        ("expand -t4 a", &["r a"]),
        ("rev a", &["r a"]),
        ("realpath a", &["r a"]),
        ("readlink -f a", &["r a"]),
        ("basename /etc/shadow .x", &[]),
        ("dirname /etc/shadow", &[]),
        ("file -m magic a", &["r magic", "r a"]),
        ("du -sh ~", &["r ~ *"]),
        ("tree src", &["r src *"]),
        ("less -N log", &["r log"]),
        ("jq .a f.json", &["r f.json"]),
        ("jq -f prog.jq f.json", &["r prog.jq", "r f.json"]),
        ("jq --rawfile k /etc/shadow -n .", &["r /etc/shadow"]),
        ("jq --args .a x y", &[]),
        ("yq -i .a f.yaml", &["r f.yaml", "w f.yaml"]),
        ("awk '{print $1}' v=1 /etc/passwd", &["r /etc/passwd"]),
        ("sed -n 1p /etc/passwd", &["r /etc/passwd"]),
        ("sed -e 1d a b", &["r a", "r b"]),
        ("find ~ -name x", &["r ~ *"]),
        ("find -name x", &["r . *"]),
        ("cp a b", &["w b *", "r a"]),
        ("cp -r src /tmp/x", &["w /tmp/x *", "r src *"]),
        ("cp -t /etc a b", &["w /etc *", "r a", "r b"]),
        ("cp -s /etc/passwd link", &["w link *", "w /etc/passwd"]),
        ("mv a ../b", &["w ../b *", "w a *"]),
        ("install -d d1 d2", &["w d1", "w d2"]),
        ("install -m 755 a /usr/local/bin/a", &["w /usr/local/bin/a *", "r a"]),
        ("ln -s /etc/shadow x", &["w x *", "w /etc/shadow"]),
        ("ln -s ../up sub/link", &["w sub/link *", "w ../up", "w sub/../up"]),
        ("touch -r ref new", &["r ref", "w new"]),
        ("mkdir -p a/b", &["w a/b"]),
        ("rm -rf build", &["w build *"]),
        ("rmdir d", &["w d"]),
        ("chmod 600 f", &["w f"]),
        ("chmod -w f", &["w f"]),
        ("chmod -R u+x d", &["w d *"]),
        ("chmod --reference=r f", &["r r", "w f"]),
        ("chown -R u:g d", &["w d *"]),
        ("zip -r out.zip src", &["w out.zip", "r src *"]),
        ("zip -d out.zip member", &["w out.zip"]),
        ("unzip a.zip", &["r a.zip", "w . *"]),
        ("unzip a.zip -d /etc", &["w /etc *", "r a.zip"]),
        ("unzip -l a.zip", &["r a.zip"]),
        ("tar czf out.tgz src", &["w out.tgz", "r src *"]),
        ("tar -cf out.tar -C /etc passwd", &["w out.tar", "r /etc/passwd *"]),
        ("tar xzf a.tgz -C /etc", &["r a.tgz", "w /etc *"]),
        ("tar -xf a.tar", &["r a.tar", "w . *"]),
        ("tar tf a.tar", &["r a.tar"]),
        ("tar -T names -cf o.tar", &["r names", "w o.tar"]),
        ("git -C /other status", &["x /other *"]),
        ("git --git-dir=/x/.git log", &["x /x/.git *"]),
        ("git diff --no-index /etc/passwd b", &["r /etc/passwd *", "r b *"]),
        ("git diff HEAD -- src", &["r HEAD *", "r src *"]),
        ("git log HEAD -- src", &[]),
        ("git blame --contents /etc/passwd f", &["r /etc/passwd"]),
        ("make -C /tmp/p build", &["x /tmp/p *"]),
        ("make -f ../Makefile", &["x ../Makefile *"]),
        (
            "cargo build --manifest-path ../x/Cargo.toml --target-dir /tmp/t",
            &["w /tmp/t *", "x ../x/Cargo.toml *"],
        ),
        ("npm --prefix ui run lint", &["x ui *"]),
        ("echo /etc/shadow", &[]),
        ("which cat", &[]),
        ("bash -c 'cat /etc/passwd'", &["r /etc/passwd"]),
        ("sudo -u bob cat /etc/shadow", &["r /etc/shadow"]),
        ("find /etc -exec cat {} \\;", &["r /etc *", "r /etc"]),
    ];
    let mut wrong = Vec::new();
    for (script, expected) in rows {
        let mut got = files(script);
        let mut want: Vec<String> = expected.iter().map(|s| (*s).to_owned()).collect();
        got.sort();
        want.sort();
        if got != want {
            wrong.push(format!("{script}: got {got:?}, want {want:?}"));
        }
    }
    assert!(wrong.is_empty(), "{} rows differ:\n{}", wrong.len(), wrong.join("\n"));
}

#[test]
fn options_a_row_does_not_know_are_opaque() {
    for script in [
        "cat --no-such-option a",
        "cp --bogus a b",
        "tar --bogus -cf a b",
        "tar -P -xf a.tar",
        "make CC=/tmp/evil",
        "jq --arg=k v .",
        "zip -T a.zip b",
    ] {
        assert!(kinds(&clean(script)).contains(&OpaqueKind::ProgramOption), "{script}");
    }
    // getopt_long reads a unique prefix as the whole option: `--outp` is sort's `--output`, a write.
    let a = clean("sort --outp=/etc/x a");
    assert!(a.redirections.iter().any(|r| r.target == "/etc/x" && r.write), "{a:?}");
}

#[test]
fn words_known_only_at_run_time_are_marked() {
    let a = clean("cat \"$HOME/.ssh/id_rsa\"");
    assert!(a.commands[0].files[0].dynamic);
    let b = clean("find a b -exec cat {} \\;");
    let cat = b.commands.iter().find(|c| c.program == "cat").unwrap();
    assert!(cat.files.iter().all(|f| f.dynamic), "{cat:?}");
}

/// A short command naming a pattern many times (`cat * * * ...`) would judge hundreds of thousands of
/// files and fill the call's records: past `MAX_FILES_PER_EVALUATION` it prompts, and the evaluation
/// stays bounded.
#[test]
fn a_command_naming_too_many_files_prompts_and_stays_bounded() {
    use portcullis_policy::{Decision, EvalContext, Policy};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(
        root.join("policy.json"),
        r#"{ "commands": { "default": "allow", "rules": [] }, "paths": { "roots": [{ "path": ".", "access": "write" }] } }"#,
    )
    .unwrap();
    for i in 0..200 {
        std::fs::write(root.join(format!("f{i}")), "").unwrap();
    }
    let policy = Policy::load(&[root.join("policy.json")], &root).unwrap();
    let ctx = EvalContext { cwd: root.clone(), home: None };
    let few = policy.evaluate_command("cat * *", &ctx);
    assert_eq!(few.decision, Decision::Allow, "{:?}", few.reasons);
    let many = policy.evaluate_command(&format!("cat{}", " *".repeat(100)), &ctx);
    assert_eq!(many.decision, Decision::Prompt);
    assert!(many.reasons.iter().any(|r| r.contains("names more than 4096 files")), "{:?}", many.reasons);
    assert!(
        many.accesses.len() <= portcullis_policy::MAX_FILES_PER_EVALUATION + 1,
        "{}",
        many.accesses.len()
    );
}
