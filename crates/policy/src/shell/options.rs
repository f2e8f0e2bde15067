//! Option tables of the programs policies commonly allow as read-only (`ls`, `cat`, `grep`, `sort`,
//! `git diff`...). An option that writes a file is reported as a write (`sort -o FILE`, `git diff
//! --output=FILE`, `uniq IN OUT`); one that runs a program or changes the system (`sort
//! --compress-program`, `rg --pre`, `date -s`, `file -C`, `git branch -D`) and any option the table does
//! not know are opaque (`ProgramOption`): an allowed read-only program never writes or runs code unseen.

use super::words::Word;
use super::{Analyzer, OpaqueKind};

/// What an option does besides reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Effect {
    /// Its value is a file written.
    Writes,
    /// It runs a program or changes the system or the repository.
    Acts,
}

/// What a program's operands are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operands {
    /// Files read (or patterns).
    Read,
    /// `uniq [IN [OUT]]`: the second is written.
    SecondWritten,
    /// `date [+FORMAT]`: any other operand sets the clock.
    FormatOnly,
    /// `git branch NAME`: without a listing option an operand creates a branch.
    CreatesUnlessListing,
}

/// One program's options (GNU getopt style). Long options: `name` is a flag, `name=` takes a value
/// (attached or the next word), `name?` takes an optional attached value. Unambiguous abbreviations of
/// long options, which getopt accepts, are not listed, so they fail closed.
struct Spec {
    program: &'static str,
    flags: &'static str,
    /// Short options taking a value, attached (`-n5`) or the next word (`-n 5`).
    with_value: &'static str,
    /// Short options taking an optional value, attached only (`git diff -M50%`, `date -Iseconds`).
    attached_value: &'static str,
    /// `-5` (head, tail, grep, diff, git log) is a number option.
    digits: bool,
    /// Space-separated.
    long: &'static str,
    /// Options (`-o`, `--output`) with an effect.
    effects: &'static [(&'static str, Effect)],
    operands: Operands,
}

const fn spec(program: &'static str, flags: &'static str, with_value: &'static str) -> Spec {
    Spec {
        program,
        flags,
        with_value,
        attached_value: "",
        digits: false,
        long: "",
        effects: &[],
        operands: Operands::Read,
    }
}

const HELP: &str = "help version";

const SPECS: &[Spec] = &[
    Spec {
        long: "all almost-all author escape block-size= ignore-backups color? colour? classify? file-type \
format= full-time group-directories-first no-group human-readable si dereference-command-line \
dereference-command-line-symlink-to-dir hide= hyperlink? indicator-style= inode ignore= \
kibibytes literal numeric-uid-gid hide-control-chars show-control-chars quote-name \
quoting-style= reverse recursive size sort= time= time-style= tabsize= width= context zero \
directory dereference help version",
        ..spec("ls", "aAbBcCdDfFgGhHiklLmnNopqQrRsStuUvxXZ1", "ITw")
    },
    Spec {
        long: "show-all number-nonblank show-ends number squeeze-blank show-tabs show-nonprinting help version",
        ..spec("cat", "AbeEnstTuv", "")
    },
    Spec {
        digits: true,
        long: "bytes= lines= quiet silent verbose zero-terminated help version",
        ..spec("head", "qvz", "cn")
    },
    Spec {
        digits: true,
        long: "bytes= follow? lines= max-unchanged-stats= pid= quiet silent retry sleep-interval= verbose \
zero-terminated help version",
        ..spec("tail", "fFqvz", "cns")
    },
    Spec {
        long: "bytes chars lines files0-from= max-line-length words total= help version",
        ..spec("wc", "clmwL", "")
    },
    Spec {
        long: "dereference file-system cached= format= printf= terse help version",
        ..spec("stat", "LfSt", "c")
    },
    Spec {
        long: "brief checking-printout exclude= exclude-quiet= extension files-from= separator= mime mime-type \
mime-encoding keep-going list dereference no-dereference no-buffer no-pad preserve-date \
parameter= raw special-files uncompress uncompress-noreport print0 magic-file= compile help \
version",
        effects: &[("-C", Effect::Acts), ("--compile", Effect::Acts)],
        ..spec("file", "bcCdEhiIklLNnprsSvzZ0", "eFfmP")
    },
    Spec {
        digits: true,
        long: "normal brief report-identical-files context? unified? ed rcs side-by-side width= left-column \
suppress-common-lines show-c-function show-function-line= label= expand-tabs initial-tab \
tabsize= suppress-blank-empty paginate recursive no-dereference new-file unidirectional-new-file \
ignore-file-name-case no-ignore-file-name-case exclude= exclude-from= starting-file= from-file= \
to-file= ignore-case ignore-tab-expansion ignore-trailing-space ignore-space-change \
ignore-all-space ignore-blank-lines ignore-matching-lines= text strip-trailing-cr minimal \
horizon-lines= speed-large-files color? palette= old-line-format= new-line-format= \
unchanged-line-format= line-format= old-group-format= new-group-format= unchanged-group-format= \
changed-group-format= help version",
        ..spec("diff", "abBcdeEfiilnNpqrsStTuvwyZ", "CDFILSUWxX")
    },
    Spec {
        digits: true,
        long: "extended-regexp fixed-strings basic-regexp perl-regexp regexp= file= ignore-case no-ignore-case \
word-regexp line-regexp null-data no-messages invert-match max-count= byte-offset line-number \
no-line-number line-buffered with-filename no-filename label= only-matching quiet silent \
binary-files= text directories= devices= recursive dereference-recursive include= exclude= \
exclude-from= exclude-dir= files-without-match files-with-matches count initial-tab null \
before-context= after-context= context= color? colour? binary help version",
        ..spec("grep", "EFGPiyvwxcLloqsbHhnTZzUraRI", "efmABCdD")
    },
    Spec {
        long: "regexp= file= after-context= before-context= context= binary block-buffered byte-offset \
case-sensitive color= colors= column context-separator= count count-matches crlf debug \
dfa-size-limit= encoding= engine= field-context-separator= field-match-separator= files \
files-with-matches files-without-match fixed-strings follow glob= glob-case-insensitive heading \
no-heading hidden iglob= ignore-case ignore-file= ignore-file-case-insensitive include-zero \
invert-match json line-buffered line-number line-regexp max-columns= max-columns-preview \
max-count= max-depth= max-filesize= mmap multiline multiline-dotall no-config no-ignore \
no-ignore-dot no-ignore-exclude no-ignore-files no-ignore-global no-ignore-messages \
no-ignore-parent no-ignore-vcs no-line-number no-messages no-mmap no-require-git no-unicode null \
null-data one-file-system only-matching passthru path-separator= pcre2 pre-glob= pretty quiet \
regex-size-limit= replace= search-zip smart-case sort= sortr= stats stop-on-nonmatch text \
threads= trim type= type-not= type-add= type-clear= type-list unrestricted vimgrep with-filename \
no-filename word-regexp auto-hybrid-regex hostname-bin= pre= help version",
        effects: &[("--pre", Effect::Acts), ("--hostname-bin", Effect::Acts)],
        ..spec("rg", "abcFHhiIlLnNopqsSuUvwxz0.", "ABCeEfgjmMrtT")
    },
    Spec {
        long: "ignore-leading-blanks dictionary-order ignore-case general-numeric-sort ignore-nonprinting \
month-sort human-numeric-sort numeric-sort random-sort random-source= reverse sort= version-sort \
batch-size= check? compress-program= debug files0-from= key= merge output= stable buffer-size= \
field-separator= temporary-directory= parallel= unique zero-terminated help version",
        effects: &[
            ("-o", Effect::Writes),
            ("--output", Effect::Writes),
            ("--compress-program", Effect::Acts),
            ("-T", Effect::Writes),
            ("--temporary-directory", Effect::Writes),
        ],
        ..spec("sort", "bcCdfghiMmnrRsuVz", "kSoTt")
    },
    Spec {
        long: "count repeated all-repeated? skip-fields= group? ignore-case skip-chars= unique zero-terminated \
check-chars= help version",
        operands: Operands::SecondWritten,
        ..spec("uniq", "cdDiuz", "fsw")
    },
    Spec {
        long: "gitignore gitfile= ignore-case matchdirs metafirst prune info infofile= noreport charset= \
filelimit= timefmt= si du inodes device dirsfirst filesfirst sort= nolinks fromfile fromtabfile \
fflinks hyperlink scheme= authority= opt-toggle condense help version",
        effects: &[("-o", Effect::Writes)],
        ..spec("tree", "adlfxRqNQpugshDFvtcUriASnCXJ", "LPIoHT")
    },
    Spec {
        long: "date= debug file= iso-8601? resolution rfc-email rfc-3339= reference= set= universal utc help \
version",
        effects: &[("-s", Effect::Acts), ("--set", Effect::Acts)],
        operands: Operands::FormatOnly,
        attached_value: "I",
        ..spec("date", "Ru", "dfrs")
    },
    Spec { long: "all skip-alias skip-functions help version", ..spec("which", "as", "") },
    Spec {
        long: "all kernel-name nodename kernel-release kernel-version machine processor hardware-platform \
operating-system help version",
        ..spec("uname", "asnrvmpio", "")
    },
    Spec { long: HELP, ..spec("whoami", "", "") },
    Spec { long: HELP, ..spec("pwd", "LP", "") },
];

/// `git status|diff|log|show|blame|branch` (the read subcommands policies allow) have tables too; other
/// subcommands are for rules to judge.
const GIT_DIFF_LOG_LONG: &str = "patch no-patch unified= output= output-indicator-new= output-indicator-old= \
output-indicator-context= raw patch-with-raw indent-heuristic no-indent-heuristic minimal \
patience histogram anchored= diff-algorithm= stat? compact-summary numstat shortstat dirstat? \
cumulative dirstat-by-file? summary patch-with-stat name-only name-status submodule? color? \
no-color color-moved? no-color-moved color-moved-ws= no-color-moved-ws word-diff? \
word-diff-regex= color-words? no-renames rename-empty no-rename-empty check ws-error-highlight= \
full-index binary abbrev? no-abbrev break-rewrites? find-renames? find-copies? \
find-copies-harder irreversible-delete diff-filter= find-object= pickaxe-all pickaxe-regex \
skip-to= rotate-to= relative? no-relative text ignore-cr-at-eol ignore-space-at-eol \
ignore-space-change ignore-all-space ignore-blank-lines ignore-matching-lines= \
inter-hunk-context= function-context exit-code quiet ext-diff no-ext-diff textconv no-textconv \
ignore-submodules? src-prefix= dst-prefix= no-prefix default-prefix line-prefix= \
ita-invisible-in-index ita-visible-in-default cached staged merge-base no-index follow \
no-decorate decorate? decorate-refs= decorate-refs-exclude= clear-decorations source mailmap \
no-mailmap use-mailmap no-use-mailmap full-diff log-size max-count= skip= since= after= \
since-as-filter= until= before= author= committer= grep-reflog= grep= all-match invert-grep \
regexp-ignore-case basic-regexp extended-regexp fixed-strings perl-regexp remove-empty merges \
no-merges min-parents= max-parents= no-min-parents no-max-parents first-parent \
exclude-first-parent-only not all branches? tags? remotes? glob= exclude= reflog alternate-refs \
single-worktree ignore-missing bisect stdin cherry-mark cherry-pick left-only right-only cherry \
walk-reflogs merge boundary simplify-by-decoration show-pulls full-history dense sparse \
simplify-merges ancestry-path? date-order author-date-order topo-order reverse no-walk? do-walk \
pretty? format= abbrev-commit no-abbrev-commit oneline encoding= expand-tabs? no-expand-tabs \
notes? no-notes show-notes? show-signature relative-date date= parents children left-right graph \
show-linear-break? diff-merges= no-diff-merges combined-all-paths remerge-diff cc dd root \
show-stats name-rev ignore-cr-at-eol show-origin raw no-stat help";

const GIT_DIFF_LOG: Spec = Spec {
    digits: true,
    long: GIT_DIFF_LOG_LONG,
    effects: &[
        ("--output", Effect::Writes),
        ("--ext-diff", Effect::Acts),
        ("--textconv", Effect::Acts),
        ("--show-signature", Effect::Acts),
    ],
    attached_value: "UMCBX",
    ..spec("git", "pusRabwWDzEFPigcmtr", "nSGOlL")
};

const GIT_STATUS: Spec = Spec {
    long: "short branch show-stash porcelain? long verbose untracked-files? ignore-submodules? ignored? \
column? no-column ahead-behind no-ahead-behind renames no-renames find-renames? null help",
    attached_value: "u",
    ..spec("git status", "sbvz", "")
};

const GIT_BLAME: Spec = Spec {
    long: "root show-stats score-debug show-name show-number show-email porcelain line-porcelain \
incremental encoding= contents= date= progress no-progress reverse= first-parent ignore-rev= \
ignore-revs-file= color-lines color-by-age minimal abbrev? help",
    attached_value: "MC",
    ..spec("git blame", "bcfhlnpstwe", "LS")
};

const GIT_BRANCH: Spec = Spec {
    long: "all remotes list verbose quiet color? no-color contains? no-contains? merged? no-merged? \
points-at= sort= format= column? no-column show-current ignore-case abbrev= no-abbrev omit-empty \
delete move copy force set-upstream-to= unset-upstream edit-description track? no-track \
create-reflog recurse-submodules help",
    effects: &[
        ("-d", Effect::Acts),
        ("-D", Effect::Acts),
        ("--delete", Effect::Acts),
        ("-m", Effect::Acts),
        ("-M", Effect::Acts),
        ("--move", Effect::Acts),
        ("-c", Effect::Acts),
        ("-C", Effect::Acts),
        ("--copy", Effect::Acts),
        ("-f", Effect::Acts),
        ("--force", Effect::Acts),
        ("-u", Effect::Acts),
        ("--set-upstream-to", Effect::Acts),
        ("--unset-upstream", Effect::Acts),
        ("--edit-description", Effect::Acts),
        ("-t", Effect::Acts),
        ("--track", Effect::Acts),
        ("--no-track", Effect::Acts),
        ("--create-reflog", Effect::Acts),
        ("--recurse-submodules", Effect::Acts),
    ],
    operands: Operands::CreatesUnlessListing,
    ..spec("git branch", "arlvqiCcdDfmMt", "u")
};

/// Reports the options of `program` (with `args` after its name) that write, act or are unknown, and
/// the variables builtins assign (`printf -v PATH`, `read LD_PRELOAD`).
pub(super) fn inspect(analyzer: &mut Analyzer, program: &str, args: &[Word], text: &str) {
    if let Some(names) = assigned_names(program, args)
        && names.iter().any(|n| n.dynamic || super::variables::injects_code(&n.text))
    {
        analyzer.opaque(OpaqueKind::CodeInjectingVariable, text);
    }
    // `shopt -s dotglob|extglob|nocaseglob|globstar...` changes what patterns match; `shopt -p`/`-q`
    // and listing only read.
    if program == "shopt" && args.iter().any(|a| a.text.starts_with('-') && a.text.contains(['s', 'u'])) {
        analyzer.opaque(OpaqueKind::ProgramOption, text);
        return;
    }
    if program == "git" {
        let Some((sub, rest)) = git_subcommand(args) else { return };
        let spec = match sub {
            "diff" | "log" | "show" | "whatchanged" => &GIT_DIFF_LOG,
            "status" => &GIT_STATUS,
            "blame" | "annotate" => &GIT_BLAME,
            "branch" => &GIT_BRANCH,
            _ => return,
        };
        return check(analyzer, spec, rest, text);
    }
    if let Some(spec) = SPECS.iter().find(|s| s.program == program) {
        check(analyzer, spec, args, text);
    }
}

/// The variables a builtin assigns: `printf -v NAME`, `read [-a] NAME...`, `mapfile`/`readarray NAME`.
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
        _ => return None,
    }
    Some(names)
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

fn check(analyzer: &mut Analyzer, spec: &Spec, args: &[Word], text: &str) {
    let mut operands: Vec<&Word> = Vec::new();
    let mut listing = false;
    let mut i = 0;
    let mut options_done = false;
    while let Some(arg) = args.get(i) {
        i += 1;
        let a = arg.text.as_str();
        if options_done || a == "-" || !a.starts_with('-') {
            operands.push(arg);
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
            let Some(entry) = spec.long.split_whitespace().find(|l| l.trim_end_matches(['=', '?']) == name)
            else {
                return unknown(analyzer, spec, a, text);
            };
            if attached.is_some() && !entry.ends_with(['=', '?']) {
                return unknown(analyzer, spec, a, text);
            }
            let value = match attached {
                Some(v) => Some(Word { text: v.to_owned(), dynamic: arg.dynamic }),
                None if entry.ends_with('=') => {
                    i += 1;
                    args.get(i - 1).cloned()
                }
                None => None,
            };
            listing |= matches!(
                name,
                "list" | "all" | "remotes" | "contains" | "merged" | "no-merged" | "points-at"
            );
            effect(analyzer, spec, &format!("--{name}"), value, text);
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
                    Some(Word { text: rest, dynamic: arg.dynamic })
                };
                effect(analyzer, spec, &format!("-{c}"), value, text);
                break;
            }
            if spec.attached_value.contains(*c) {
                effect(analyzer, spec, &format!("-{c}"), None, text);
                break;
            }
            if spec.flags.contains(*c) || (spec.digits && c.is_ascii_digit()) {
                listing |= matches!(c, 'l' | 'a' | 'r') && spec.operands == Operands::CreatesUnlessListing;
                effect(analyzer, spec, &format!("-{c}"), None, text);
                continue;
            }
            return unknown(analyzer, spec, a, text);
        }
    }
    match spec.operands {
        Operands::Read => {}
        Operands::SecondWritten => {
            if let Some(out) = operands.get(1) {
                analyzer.add_redirection(None, format!("{} output", spec.program), (*out).clone(), text);
            }
        }
        Operands::FormatOnly => {
            if operands.iter().any(|o| !o.text.starts_with('+')) {
                analyzer.opaque(OpaqueKind::ProgramOption, text);
            }
        }
        Operands::CreatesUnlessListing => {
            if !listing && !operands.is_empty() {
                analyzer.opaque(OpaqueKind::ProgramOption, text);
            }
        }
    }
}

fn effect(analyzer: &mut Analyzer, spec: &Spec, option: &str, value: Option<Word>, text: &str) {
    match spec.effects.iter().find(|(o, _)| *o == option).map(|(_, e)| *e) {
        Some(Effect::Writes) => match value {
            Some(target) => {
                analyzer.add_redirection(None, format!("{} {option}", spec.program), target, text)
            }
            // `file -C` writes `magic.mgc` in the working directory.
            None => analyzer.add_redirection(
                None,
                format!("{} {option}", spec.program),
                Word::literal("magic.mgc"),
                text,
            ),
        },
        Some(Effect::Acts) => analyzer.opaque(OpaqueKind::ProgramOption, text),
        None => {}
    }
}

fn unknown(analyzer: &mut Analyzer, spec: &Spec, option: &str, text: &str) {
    tracing::debug!(program = spec.program, option, "option not in the table: opaque");
    analyzer.opaque(OpaqueKind::ProgramOption, text);
}

/// Splits `-abc` option clusters and skips option arguments: `with_arg` letters take the rest of the
/// cluster or the next word; `long_with_arg` long options take the next word unless written `--x=v`.
/// Returns the index of the first operand.
pub(super) fn skip_options(args: &[Word], with_arg: &str, long_with_arg: &[&str]) -> usize {
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        let a = arg.text.as_str();
        if a == "--" {
            return i + 1;
        }
        if a == "-" || !a.starts_with('-') {
            return i;
        }
        i += 1;
        if let Some(long) = a.strip_prefix("--") {
            if !long.contains('=') && long_with_arg.contains(&long) {
                i += 1;
            }
            continue;
        }
        let cluster: Vec<char> = a.chars().skip(1).collect();
        for (pos, c) in cluster.iter().enumerate() {
            if with_arg.contains(*c) {
                if pos + 1 == cluster.len() {
                    i += 1;
                }
                break;
            }
        }
    }
    i
}
