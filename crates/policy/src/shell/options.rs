//! Parses a command against its program's row (`shell/program_specs.rs`): the options of the programs
//! policies commonly allow (`ls`, `cat`, `grep`, `sort`, `cp`, `git diff`...). An option that writes a file is reported as a write (`sort -o FILE`, `git diff
//! --output=FILE`, `uniq IN OUT`); one that runs a program or changes the system (`sort
//! --compress-program`, `rg --pre`, `date -s`, `file -C`, `git branch -D`) and any option the table does
//! not know are opaque (`ProgramOption`): an allowed read-only program never writes or runs code unseen.

use super::file_operands;
use super::getopt::long_name;
use super::program_specs;
use super::spec::{Effect, Operands, Parsed, Spec};
use super::words::Word;
use super::{Analyzer, FileRole, OpaqueKind};

/// Reports the options of `program` (with `args` after its name) that write, act or are unknown, the
/// files its operands and options name (onto the command at `index`), and the variables builtins assign
/// (`printf -v PATH`, `read LD_PRELOAD`).
pub(super) fn inspect(analyzer: &mut Analyzer, index: usize, program: &str, args: &[Word], text: &str) {
    // `test -v NAME` and `unset NAME` assign nothing; the others assign the names they take.
    let assigns = !matches!(program, "test" | "[" | "unset");
    for name in assigned_names(program, args).unwrap_or_default() {
        if !matches!(program, "test" | "[") {
            analyzer.guard_resolved(&name.text, text);
        }
        let assignment = assigns.then_some((None, super::variables::Reach::Shell));
        analyzer.evaluated_name(&name, assignment, text);
    }
    // `shopt -s dotglob|extglob|nocaseglob|globstar...` changes what patterns match; `shopt -p`/`-q`
    // and listing only read.
    if program == "shopt" && args.iter().any(|a| a.text.starts_with('-') && a.text.contains(['s', 'u'])) {
        analyzer.opaque(OpaqueKind::ProgramOption, text);
        return;
    }
    if program == "git" {
        file_operands::git_globals(analyzer, index, args);
        let Some((sub, rest)) = git_subcommand(args) else { return };
        let Some(spec) = program_specs::git(sub) else { return };
        return check(analyzer, index, spec, rest, text);
    }
    if program == "tar" {
        let before = analyzer.out.commands.get(index).map_or(0, |c| c.files.len());
        file_operands::tar(analyzer, index, args, text);
        // `tar -h` / `--dereference` archives what links point to.
        let dereferences = args.iter().any(|a| {
            a.text == "--dereference"
                || (a.text.starts_with('-') && !a.text.starts_with("--") && a.text.contains('h'))
                || (!a.text.starts_with('-')
                    && a.text.contains('h')
                    && args.first().is_some_and(|f| std::ptr::eq(a, f)))
        });
        if dereferences {
            analyzer.follow_links_of(index, before);
        }
        return;
    }
    if let Some(spec) = program_specs::find(program) {
        check(analyzer, index, spec, args, text);
    }
}

/// The variables a builtin names: `printf -v NAME`, `read [-a] NAME...`, `mapfile`/`readarray NAME`,
/// `test -v NAME`, `unset NAME`, `getopts OPTSTRING NAME`, `wait -p NAME`. (The declarations, `declare`,
/// `export`, `local`..., are read from their syntax node: `Analyzer::declaration`.)
fn assigned_names(program: &str, args: &[Word]) -> Option<Vec<Word>> {
    let mut names = Vec::new();
    let mut i = 0;
    match program {
        "printf" => {
            while let Some(arg) = args.get(i) {
                i += 1;
                match arg.text.strip_prefix("-v") {
                    Some("") => names.extend(args.get(i).cloned()),
                    Some(rest) if !arg.text.starts_with("--") => {
                        names.push(Word { text: rest.to_owned(), dynamic: arg.dynamic })
                    }
                    _ => {}
                }
                if !arg.text.starts_with('-') {
                    break;
                }
            }
        }
        "read" | "mapfile" | "readarray" => {
            let with_value = if program == "read" { "adinNptu" } else { "dnOsuCc" };
            while let Some(arg) = args.get(i) {
                i += 1;
                let a = arg.text.as_str();
                if let Some(cluster) = a.strip_prefix('-').filter(|c| !c.is_empty()) {
                    // `-a NAME` names the array read assigns; other valued options take the next word.
                    if let Some(at) = cluster.find(|c| with_value.contains(c)) {
                        let attached = &cluster[at + 1..];
                        let value = if attached.is_empty() {
                            i += 1;
                            args.get(i - 1).cloned()
                        } else {
                            Some(Word { text: attached.to_owned(), dynamic: arg.dynamic })
                        };
                        if cluster[at..].starts_with('a') && program == "read" {
                            names.extend(value);
                        }
                    }
                    continue;
                }
                names.push(arg.clone());
            }
        }
        // `test -v NAME`, `test -R NAME` (any number of them, in any expression).
        "test" | "[" => {
            while let Some(arg) = args.get(i) {
                i += 1;
                // A computed operator may be `-v` when it runs: a subscript after it counts.
                let operand = args.get(i).filter(|n| arg.dynamic && n.text.contains('['));
                if matches!(arg.text.as_str(), "-v" | "-R") {
                    names.extend(args.get(i).cloned());
                } else {
                    names.extend(operand.cloned());
                }
            }
        }
        // `unset [-fvn] NAME...`: a function's name (`-f`) is not evaluated, a variable's is.
        "unset" => {
            let functions = args.iter().any(|a| a.text.starts_with('-') && a.text.contains('f'));
            if !functions {
                names.extend(args.iter().filter(|a| !a.text.starts_with('-')).cloned());
            }
        }
        // `getopts OPTSTRING NAME [ARGS]`.
        "getopts" => names.extend(args.iter().filter(|a| !a.text.starts_with('-')).nth(1).cloned()),
        // `wait -p NAME`.
        "wait" => {
            while let Some(arg) = args.get(i) {
                i += 1;
                if arg.text == "-p" {
                    names.extend(args.get(i).cloned());
                }
            }
        }
        _ => return None,
    }
    Some(names)
}

impl Analyzer {
    /// A variable name a builtin takes (`printf -v`, `test -v`, `unset`, `read`, `declare`...), and for
    /// one it assigns, the value (if known) and where it reaches: bash evaluates a subscript there as
    /// arithmetic, and runs any substitution written in it (`test -v 'a[$(cmd)]'` runs cmd), even from
    /// quoted text.
    pub(crate) fn evaluated_name(
        &mut self,
        name: &Word,
        assignment: Option<(Option<&str>, super::variables::Reach)>,
        text: &str,
    ) {
        if name.dynamic {
            self.opaque(OpaqueKind::EvaluatedValue, format!("{text}: the variable's name is computed"));
            return;
        }
        if let Some((_, index)) = name.text.split_once('[') {
            let index = index.strip_suffix(']').unwrap_or(index);
            if index.contains(['`', '$', '(']) {
                self.opaque(
                    OpaqueKind::EvaluatedValue,
                    format!("{text}: the subscript of `{}` is evaluated, and code in it runs", name.text),
                );
                return;
            }
            if !matches!(index, "@" | "*") {
                self.arithmetic_text(index, text);
            }
        }
        if let Some((value, reach)) = assignment {
            self.check_variable(&name.text, value, reach, text);
        }
    }
}

/// The subcommand after git's global options (`-C DIR`, `-c K=V`, `--git-dir=...`) and its arguments.
fn git_subcommand(args: &[Word]) -> Option<(&str, &[Word])> {
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        let a = arg.text.as_str();
        if !a.starts_with('-') {
            return Some((a, args.get(i + 1..).unwrap_or(&[])));
        }
        i += if matches!(a, "-C" | "-c" | "--git-dir" | "--work-tree" | "--namespace" | "--super-prefix") {
            2
        } else {
            1
        };
    }
    None
}

fn check(analyzer: &mut Analyzer, index: usize, spec: &Spec, args: &[Word], text: &str) {
    let mut parsed = Parsed::default();
    let mut i = 0;
    let mut options_done = false;
    while let Some(arg) = args.get(i) {
        i += 1;
        let a = arg.text.as_str();
        // `chmod -w FILE`: a mode, not an option.
        let dash_operand = !spec.dash_operands.is_empty()
            && a.len() > 1
            && a[1..].chars().all(|c| spec.dash_operands.contains(c));
        if options_done || a == "-" || !a.starts_with('-') || dash_operand {
            parsed.operands.push(arg);
            continue;
        }
        if a == "--" {
            options_done = true;
            continue;
        }
        if let Some(long) = a.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (long, None),
            };
            let names = spec.long.split_whitespace().map(|l| l.trim_end_matches(['=', '?']));
            let Some(name) = long_name(names, name) else {
                return unknown(analyzer, spec, a, text);
            };
            let Some(entry) = spec.long.split_whitespace().find(|l| l.trim_end_matches(['=', '?']) == name)
            else {
                return unknown(analyzer, spec, a, text);
            };
            if attached.is_some() && !entry.ends_with(['=', '?']) {
                return unknown(analyzer, spec, a, text);
            }
            if entry.ends_with("==") && attached.is_some() {
                // `--arg=NAME VALUE` is not getopt's: where the value is would be a guess.
                return unknown(analyzer, spec, a, text);
            }
            if entry.ends_with("==") {
                i += 1; // `--arg NAME VALUE`: the name, then the value below
            }
            let value = match attached {
                Some(v) => Some(Word { text: literal_tilde(v), dynamic: arg.dynamic }),
                None if entry.ends_with('=') => {
                    i += 1;
                    args.get(i - 1).cloned()
                }
                None => None,
            };
            parsed.listing |= matches!(
                name,
                "list" | "all" | "remotes" | "contains" | "merged" | "no-merged" | "points-at"
            );
            effect(analyzer, spec, &format!("--{name}"), value, &mut parsed, text);
            continue;
        }
        let cluster: Vec<char> = a.chars().skip(1).collect();
        if spec.digits && cluster.iter().all(char::is_ascii_digit) {
            continue;
        }
        for (at, c) in cluster.iter().enumerate() {
            if spec.with_value.contains(*c) {
                let rest: String = cluster[at + 1..].iter().collect();
                let value = if rest.is_empty() {
                    i += 1;
                    args.get(i - 1).cloned()
                } else {
                    Some(Word { text: literal_tilde(&rest), dynamic: arg.dynamic })
                };
                effect(analyzer, spec, &format!("-{c}"), value, &mut parsed, text);
                break;
            }
            if spec.attached_value.contains(*c) {
                effect(analyzer, spec, &format!("-{c}"), None, &mut parsed, text);
                break;
            }
            if spec.flags.contains(*c) || (spec.digits && c.is_ascii_digit()) {
                parsed.listing |=
                    matches!(c, 'l' | 'a' | 'r') && spec.operands == Operands::CreatesUnlessListing;
                effect(analyzer, spec, &format!("-{c}"), None, &mut parsed, text);
                continue;
            }
            return unknown(analyzer, spec, a, text);
        }
    }
    match spec.operands {
        Operands::SecondWritten => {
            // A glob or braces may expand to two files, the second then being the output.
            let expands = parsed.operands.iter().any(|o| o.text.contains(['*', '?', '[', '{']));
            let outputs = if expands { parsed.operands.get(..) } else { parsed.operands.get(1..2) };
            for out in outputs.unwrap_or(&[]) {
                analyzer.add_file(index, out, FileRole::Write, false, &format!("{} output", spec.program));
            }
        }
        Operands::FormatOnly if parsed.operands.iter().any(|o| !o.text.starts_with('+')) => {
            analyzer.opaque(OpaqueKind::ProgramOption, text);
        }
        Operands::CreatesUnlessListing if !parsed.listing && !parsed.operands.is_empty() => {
            analyzer.opaque(OpaqueKind::ProgramOption, text);
        }
        _ => {}
    }
    file_operands::record(analyzer, index, spec, &parsed, text);
}

fn effect(
    analyzer: &mut Analyzer,
    spec: &Spec,
    option: &str,
    value: Option<Word>,
    parsed: &mut Parsed<'_>,
    text: &str,
) {
    parsed.given.push(option.to_owned());
    for effect in spec.effects.iter().filter(|(o, _)| *o == option).map(|(_, e)| *e) {
        match effect {
            Effect::Writes => match &value {
                Some(target) => {
                    analyzer.add_redirection(None, format!("{} {option}", spec.program), target.clone(), text)
                }
                // `file -C` writes `magic.mgc` in the working directory.
                None => analyzer.add_redirection(
                    None,
                    format!("{} {option}", spec.program),
                    Word::literal("magic.mgc"),
                    text,
                ),
            },
            Effect::Acts => analyzer.opaque(OpaqueKind::ProgramOption, text),
            Effect::OperandsNotFiles => parsed.files_end = Some(parsed.operands.len()),
            Effect::Reads | Effect::ReadsTree | Effect::WritesTree | Effect::RunsCode | Effect::Target => {
                if let Some(value) = &value {
                    parsed.values.push((value.clone(), effect, option.to_owned()));
                }
            }
            Effect::PatternGiven
            | Effect::InPlace
            | Effect::Links
            | Effect::NoExtract
            | Effect::NoModeOperand => {}
        }
    }
}

/// An option value attached to its option (`--output=~/x`, `-o~/x`): bash expands no tilde there, so
/// the program gets a folder literally named `~`.
fn literal_tilde(value: &str) -> String {
    if value.starts_with('~') { format!("./{value}") } else { value.to_owned() }
}

fn unknown(analyzer: &mut Analyzer, spec: &Spec, option: &str, text: &str) {
    tracing::debug!(program = spec.program, option, "option not in the table: opaque");
    analyzer.opaque(OpaqueKind::ProgramOption, text);
}
