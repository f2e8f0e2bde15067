//! Commands generated from the program table: every program with each path an agent might name (inside
//! the project, outside it, through symbolic links both ways, with `~`, globs, braces and variables) in
//! each operand place its row has, and each of its options, a value-taking option given a path where its
//! value is a file. A row added to the table is exercised here without a list to keep in step.

use portcullis_policy::shell::{OptionValue, ProgramRow, program_table};

/// The programs of [`OWN_MODULES`], for the policy that allows them.
pub fn own_modules() -> impl Iterator<Item = &'static str> {
    OWN_MODULES.iter().map(|(p, _)| *p)
}

/// Paths as a command names them from the project. `@OUT@` is the absolute outside folder.
pub const PATHS: &[&str] = &[
    "a.txt",
    "src",
    "src/main.rs",
    "new.txt",
    "link-in",
    "sub",
    "../outside/secret.txt",
    "@OUT@/other.txt",
    "../outside",
    "../outside/link-to-proj",
    "../outside/linkdir-to-proj/lib.rs",
    "link-out",
    "linkdir-out/other.txt",
    "~/notes.txt",
    "~",
    "src/*.rs",
    "*.txt",
    "../outside/*.txt",
    "s?c",
    "{a,b}.txt",
    "$HOME/notes.txt",
    "\"$PWD/a.txt\"",
    "$(echo a.txt)",
];

/// The paths an option's file value is tried with.
const VALUE_PATHS: &[&str] =
    &["out.txt", "a.txt", "../outside/new.txt", "link-out", "../outside/link-to-proj", "~/notes.txt", "src"];

/// Programs that run the project's own code (cargo, npm, make): what their builds do is the project's, not
/// the table's; the corpus runs them.
const RUNS_PROJECT_CODE: &[&str] = &["cargo", "npm", "make"];

/// The programs exercised, listed here and not taken from the table, so that a row removed from the
/// table still has its program run and the oracle sees what the analysis then misses: the list
/// (what policies commonly allow or prompt). A program without a row is tried as one reading its
/// operands; the table's own rows are all tried too.
pub const PROGRAMS: &[&str] = &[
    "cat",
    "head",
    "tail",
    "less",
    "more",
    "wc",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "ag",
    "sort",
    "uniq",
    "cut",
    "diff",
    "cmp",
    "comm",
    "ls",
    "tree",
    "file",
    "stat",
    "du",
    "jq",
    "yq",
    "zip",
    "unzip",
    "cp",
    "mv",
    "ln",
    "touch",
    "mkdir",
    "rm",
    "rmdir",
    "chmod",
    "chown",
    "chgrp",
    "install",
    "date",
    "sha256sum",
    "md5sum",
    "nl",
    "od",
    "base64",
    "tac",
    "fold",
    "paste",
    "fmt",
    "expand",
    "rev",
    "realpath",
    "readlink",
    "git diff",
    "git log",
    "git status",
    "git blame",
    "git branch",
];

/// Programs known by another's row.
const ALIASES: &[(&str, &str)] = &[("egrep", "grep"), ("fgrep", "grep"), ("md5sum", "sha256sum")];

/// Programs whose analysis has its own module rather than a table row, with the commands tried (`{}` is
/// the path).
const OWN_MODULES: &[(&str, &[&str])] = &[
    ("find", &["find {}", "find {} -name '*.txt'", "find {} -type f -exec cat {{}} +", "find {} -delete"]),
    ("awk", &["awk 1 {}", "awk -f prog.awk {}"]),
    ("sed", &["sed -n p {}", "sed -i s/alpha/omega/ {}"]),
    ("tar", &["tar -cf {} a.txt", "tar -cf out.tar {}", "tar -xf archive.tar -C {}", "tar -tf {}"]),
    ("tee", &["echo x | tee {}"]),
];

/// Every generated command.
pub fn commands() -> Vec<String> {
    let mut out = Vec::new();
    let table = program_table();
    for program in PROGRAMS {
        if table.iter().any(|r| r.program == *program) {
            continue;
        }
        // Another name of a row's program (`egrep` is `grep`) takes that row's operand places.
        let alias = ALIASES
            .iter()
            .find(|(a, _)| a == program)
            .and_then(|(_, p)| table.iter().find(|r| r.program == *p));
        for path in PATHS {
            match alias {
                Some(row) => out.extend(
                    operand_forms(row, path).into_iter().map(|c| c.replacen(row.program, program, 1)),
                ),
                None => out.push(format!("{program} {path}")),
            }
        }
    }
    for (_, forms) in OWN_MODULES {
        for form in *forms {
            for path in PATHS {
                out.push(form.replace("{}", path).replace("{{}}", "{}"));
            }
        }
    }
    for row in table {
        if RUNS_PROJECT_CODE.contains(&row.program) {
            continue;
        }
        for path in PATHS {
            out.extend(operand_forms(&row, path));
        }
        let base = base_operands(&row);
        for option in &row.options {
            let spelled = &option.spelling;
            let long = spelled.starts_with("--");
            let file_valued = option.effects.iter().any(|e| {
                ["Writes", "WritesTree", "Reads", "ReadsTree", "RunsCode", "Target"].contains(&e.as_str())
            });
            match option.value {
                OptionValue::None => out.push(format!("{} {spelled} {base}", row.program)),
                OptionValue::OptionalAttached => out.push(format!("{} {spelled} {base}", row.program)),
                OptionValue::TwoWords if file_valued => {
                    for path in VALUE_PATHS {
                        out.push(format!("{} {spelled} v {path} {base}", row.program));
                    }
                }
                OptionValue::TwoWords => out.push(format!("{} {spelled} v 1 {base}", row.program)),
                OptionValue::Required if file_valued => {
                    for path in VALUE_PATHS {
                        out.push(format!("{} {spelled} {path} {base}", row.program));
                        if long {
                            out.push(format!("{} {spelled}={path} {base}", row.program));
                        }
                    }
                }
                OptionValue::Required => {
                    let joined = if long { format!("{spelled}=1") } else { format!("{spelled}1") };
                    out.push(format!("{} {joined} {base}", row.program));
                }
            }
        }
        if row.digits {
            out.push(format!("{} -2 {base}", row.program));
        }
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|c| seen.insert(c.clone()));
    out
}

/// The operands a program is given when an option is what is tried.
fn base_operands(row: &ProgramRow) -> &'static str {
    match row.operands.as_str() {
        "PatternThenRead" => "alpha a.txt",
        "ProgramThenRead" => ". data.json",
        "SecondWritten" => "a.txt uniq.txt",
        "Written" => "new.txt",
        "FirstThenWritten" => "root a.txt",
        "CopyToLast" | "MoveToLast" | "Link" => "a.txt dest.txt",
        "ArchiveFirstWritten" => "out.zip a.txt",
        "ArchiveExtract" => "archive.zip",
        "GitRevisions" | "GitDiff" | "FormatOnly" | "NotFiles" | "CreatesUnlessListing" | "MakeTargets" => "",
        _ => "a.txt",
    }
}

/// The commands that put `path` in each operand place of `row`.
fn operand_forms(row: &ProgramRow, path: &str) -> Vec<String> {
    let p = row.program;
    match row.operands.as_str() {
        "PatternThenRead" => vec![format!("{p} alpha {path}")],
        "ProgramThenRead" => vec![format!("{p} . {path}")],
        "SecondWritten" => vec![format!("{p} {path}"), format!("{p} a.txt {path}")],
        "FirstThenWritten" if p == "chmod" => vec![format!("{p} 600 {path}")],
        "FirstThenWritten" => vec![format!("{p} root {path}")],
        "CopyToLast" | "MoveToLast" | "Link" => vec![
            format!("{p} {path} dest.txt"),
            format!("{p} a.txt {path}"),
            format!("{p} -r {path} destdir").replace(" -r ", if p == "cp" { " -r " } else { " " }),
        ],
        "ArchiveFirstWritten" => vec![format!("{p} -q {path} a.txt"), format!("{p} -q out.zip {path}")],
        "ArchiveExtract" => vec![format!("{p} -o -q {path}"), format!("{p} -o -q archive.zip -d {path}")],
        "GitRevisions" | "GitDiff" => vec![format!("{p} {path}"), format!("{p} --no-index a.txt {path}")],
        "FormatOnly" | "NotFiles" | "CreatesUnlessListing" | "MakeTargets" => vec![p.to_owned()],
        _ => vec![format!("{p} {path}")],
    }
}
