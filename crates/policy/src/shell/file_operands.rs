//! Turns a parsed command's operands and option values into the files it reads, writes or runs code
//! from, by the kind of operands its row declares (`shell/program_specs.rs`); `tar` and git's global
//! options have their own small parsers here.

use super::getopt::long_name;
use super::spec::{ALWAYS, Effect, Operands, Parsed, Spec};
use super::words::Word;
use super::{Analyzer, FileRole, OpaqueKind};

/// Records the files of one command parsed against its row.
pub(super) fn record(analyzer: &mut Analyzer, index: usize, spec: &Spec, parsed: &Parsed<'_>, text: &str) {
    let recursive =
        spec.recursive == ALWAYS || parsed.given.iter().any(|g| spec.recursive.contains(&g.as_str()));
    let follows =
        spec.follows_links == ALWAYS || parsed.given.iter().any(|g| spec.follows_links.contains(&g.as_str()));
    let before = analyzer.out.commands.get(index).map_or(0, |c| c.files.len());
    record_files(analyzer, index, spec, parsed, recursive, text);
    if follows && let Some(command) = analyzer.out.commands.get_mut(index) {
        for file in command.files.iter_mut().skip(before).filter(|f| f.recursive) {
            file.follows_links = true;
        }
    }
}

fn record_files(
    analyzer: &mut Analyzer,
    index: usize,
    spec: &Spec,
    parsed: &Parsed<'_>,
    recursive: bool,
    text: &str,
) {
    let program = spec.program;
    for (word, effect, option) in &parsed.values {
        let via = format!("{program} {option}");
        let (role, tree) = match effect {
            Effect::Reads => (FileRole::Read, false),
            Effect::ReadsTree => (FileRole::Read, true),
            Effect::WritesTree => (FileRole::Write, true),
            Effect::RunsCode => (FileRole::RunsCode, true),
            // Whatever lands in the folder is written below it.
            Effect::Target => (FileRole::Write, true),
            _ => continue,
        };
        analyzer.add_file(index, word, role, tree, &via);
    }
    let end = parsed.files_end.unwrap_or(parsed.operands.len()).min(parsed.operands.len());
    let operands: &[&Word] = parsed.operands.get(..end).unwrap_or(&[]);
    let mut add = |word: &Word, role: FileRole, tree: bool, what: &str| {
        analyzer.add_file(index, word, role, tree, &format!("{program} {what}"));
    };
    let given = |effect: Effect| parsed.has(effect, spec);
    let skip_first = |effect: Effect| usize::from(!given(effect));
    match spec.operands {
        Operands::NotFiles | Operands::FormatOnly | Operands::CreatesUnlessListing => {}
        Operands::Read | Operands::ReadTree | Operands::PatternThenRead | Operands::ProgramThenRead => {
            let tree = recursive || spec.operands == Operands::ReadTree;
            let skip = match spec.operands {
                Operands::PatternThenRead | Operands::ProgramThenRead => skip_first(Effect::PatternGiven),
                _ => 0,
            };
            let files = operands.get(skip..).unwrap_or(&[]);
            for file in files {
                add(file, FileRole::Read, tree, "operand");
                if given(Effect::InPlace) {
                    add(file, FileRole::Write, false, "in place");
                }
            }
            // With no file, `ls` lists and `rg`, `du`, `tree`, `grep -r` walk the working folder.
            let walks_cwd = tree && spec.operands != Operands::ProgramThenRead;
            if files.is_empty() && (walks_cwd || program == "ls") {
                add(&Word::literal("."), FileRole::Read, tree, "working folder");
            }
        }
        Operands::SecondWritten => {
            if let Some(input) = operands.first() {
                add(input, FileRole::Read, false, "input");
            }
        }
        Operands::Written => {
            for file in operands {
                add(file, FileRole::Write, recursive, "operand");
            }
        }
        Operands::FirstThenWritten => {
            for file in operands.get(skip_first(Effect::NoModeOperand)..).unwrap_or(&[]) {
                add(file, FileRole::Write, recursive, "operand");
            }
        }
        Operands::CopyToLast | Operands::MoveToLast => {
            let moves = spec.operands == Operands::MoveToLast;
            if given(Effect::InPlace) {
                // `install -d DIR...` creates every operand.
                for dir in operands {
                    add(dir, FileRole::Write, false, "operand");
                }
                return;
            }
            let sources = if given(Effect::Target) {
                operands
            } else {
                // An existing folder as the destination receives the sources below it.
                if let Some(destination) = operands.last() {
                    add(destination, FileRole::Write, true, "destination");
                }
                operands.get(..operands.len().saturating_sub(1)).unwrap_or(&[])
            };
            let role = if moves || given(Effect::Links) { FileRole::Write } else { FileRole::Read };
            for source in sources {
                add(source, role, recursive || moves, "source");
            }
        }
        Operands::Link => link(operands, given(Effect::Target), parsed, &mut add),
        Operands::ArchiveFirstWritten => {
            // The archive is written even when the other operands are not files (`zip -d a.zip member`).
            let Some(archive) = parsed.operands.first() else { return };
            add(archive, FileRole::Write, false, "archive");
            // zip adds `.zip` to a name without an extension.
            let name = archive.text.rsplit('/').next().unwrap_or_default();
            if !name.contains('.') {
                // After an expansion the name is another: judged as known only at run time.
                let home = archive.text == "~" || archive.text.contains(['*', '?', '[', '{']);
                let with_suffix =
                    Word { text: format!("{}.zip", archive.text), dynamic: archive.dynamic || home };
                add(&with_suffix, FileRole::Write, false, "archive");
            }
            for file in operands.get(1..).unwrap_or(&[]) {
                let role = if given(Effect::InPlace) { FileRole::Write } else { FileRole::Read };
                add(file, role, recursive, "operand");
            }
        }
        Operands::ArchiveExtract => {
            let Some(archive) = operands.first() else { return };
            add(archive, FileRole::Read, false, "archive");
            let into_folder = parsed.values.iter().any(|(_, e, _)| *e == Effect::WritesTree);
            if !given(Effect::NoExtract) && !into_folder {
                add(&Word::literal("."), FileRole::Write, true, "extracts into the working folder");
            }
        }
        Operands::GitDiff => {
            for file in operands {
                add(file, FileRole::Read, true, "operand");
            }
        }
        Operands::GitRevisions => {
            if parsed.given.iter().any(|g| g == "--no-index") {
                for file in operands {
                    add(file, FileRole::Read, recursive, "--no-index operand");
                }
            }
        }
        Operands::MakeTargets => {
            if operands.iter().any(|o| o.text.contains('=')) {
                // `make CC=/tmp/x`: an override can change which programs the Makefile runs.
                analyzer.opaque(OpaqueKind::ProgramOption, text);
            }
        }
    }
}

/// `ln [-s] TARGET... LINK` (or `-t DIR`): the link is written; each target is judged as written too,
/// since writing through the link writes it. A relative symbolic target is resolved from the link's
/// folder, so it is judged from there as well as from the working folder.
fn link(
    operands: &[&Word],
    target_given: bool,
    parsed: &Parsed<'_>,
    add: &mut impl FnMut(&Word, FileRole, bool, &str),
) {
    let symbolic = parsed.given.iter().any(|g| g == "-s" || g == "--symbolic");
    let (targets, link_name): (&[&Word], Option<&Word>) = match operands {
        [] => return,
        [only] if !target_given => (std::slice::from_ref(only), None),
        _ if target_given => (operands, None),
        [targets @ .., last] => (targets, Some(*last)),
    };
    // An existing folder as the link name receives the links below it.
    if let Some(name) = link_name {
        add(name, FileRole::Write, true, "link");
    }
    for target in targets {
        add(target, FileRole::Write, false, "target");
        let relative = !target.text.starts_with('/') && !target.text.starts_with('~');
        if symbolic
            && relative
            && let Some((folder, _)) = link_name.and_then(|l| l.text.rsplit_once('/'))
        {
            let from_link = Word { text: format!("{folder}/{}", target.text), dynamic: target.dynamic };
            add(&from_link, FileRole::Write, false, "target (from the link's folder)");
        }
    }
}

/// `git -C DIR`, `--git-dir`, `--work-tree`: git runs in that repository, whose configuration and hooks
/// may run programs.
pub(super) fn git_globals(analyzer: &mut Analyzer, index: usize, args: &[Word]) {
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        let a = arg.text.as_str();
        if !a.starts_with('-') {
            return;
        }
        i += 1;
        let (name, attached) = match a.split_once('=') {
            Some((name, value)) => (name, Some(Word { text: value.to_owned(), dynamic: arg.dynamic })),
            None => (a, None),
        };
        match name {
            "-C" | "--git-dir" | "--work-tree" => {
                let value = attached.or_else(|| {
                    i += 1;
                    args.get(i - 1).cloned()
                });
                if let Some(value) = value {
                    analyzer.add_file(index, &value, FileRole::RunsCode, true, &format!("git {name}"));
                }
            }
            "-c" | "--namespace" | "--super-prefix" | "--exec-path" | "--config-env"
                if attached.is_none() =>
            {
                i += 1;
            }
            _ => {}
        }
    }
}

/// GNU tar's options: a value taken (`f` archive, `C` folder...), or none.
const TAR_WITH_VALUE: &str = "fCTXbHKNLVgFI";
const TAR_FLAGS: &str = "cxtruAdzjJZavkmpOPSWhilUBGMsw";
const TAR_LONG: &str = "create extract get list append update catenate concatenate diff compare delete \
file= directory= files-from= exclude-from= exclude= gzip gunzip bzip2 xz lzma zstd auto-compress \
verbose keep-old-files overwrite to-stdout strip-components= transform= xform= wildcards no-wildcards \
anchored preserve-permissions same-owner no-same-owner numeric-owner owner= group= mode= mtime= sort= \
totals? dereference hard-dereference one-file-system exclude-vcs exclude-vcs-ignores exclude-caches \
recursion no-recursion null warning= show-transformed-names ignore-failed-read unlink-first \
recursive-unlink skip-old-files keep-newer-files format= posix remove-files listed-incremental= help \
version";
/// Options that run a program or let an extraction write outside its folder.
const TAR_ACTS: &[&str] = &[
    "-F",
    "-I",
    "-P",
    "--to-command",
    "--use-compress-program",
    "--checkpoint-action",
    "--info-script",
    "--new-volume-script",
    "--rsh-command",
    "--rmt-command",
    "--absolute-names",
];

/// `tar`: creating reads the operand trees and writes the archive; extracting reads the archive and
/// writes the tree of the working folder (or `-C`); listing reads the archive. Old-style clusters
/// (`tar czf out.tgz dir`) take their values from the next words in order.
pub(super) fn tar(analyzer: &mut Analyzer, index: usize, args: &[Word], text: &str) {
    let mut words: Vec<Word> = Vec::new();
    let mut rest = args.iter();
    if let Some(first) = args.first().filter(|w| !w.text.starts_with('-') && !w.text.is_empty()) {
        rest.next();
        // `tar czf out.tgz`: each letter is an option; each valued letter takes the next word, in order.
        for c in first.text.chars() {
            words.push(Word { text: format!("-{c}"), dynamic: first.dynamic });
            if TAR_WITH_VALUE.contains(c)
                && let Some(value) = rest.next()
            {
                words.push(value.clone());
            }
        }
    }
    words.extend(rest.cloned());
    let mut mode = None::<char>;
    let mut archive = None::<Word>;
    let mut folder = None::<Word>;
    let mut reads = Vec::new();
    let mut operands = Vec::new();
    let mut removes_sources = false;
    let mut i = 0;
    let mut options_done = false;
    while let Some(word) = words.get(i) {
        i += 1;
        let a = word.text.as_str();
        if options_done || a == "-" || !a.starts_with('-') {
            operands.push(word.clone());
            continue;
        }
        if a == "--" {
            options_done = true;
            continue;
        }
        let take = |i: &mut usize, attached: Option<&str>| match attached {
            Some(v) => Some(Word { text: v.to_owned(), dynamic: word.dynamic }),
            None => {
                *i += 1;
                words.get(*i - 1).cloned()
            }
        };
        if let Some(long) = a.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            // getopt_long takes a prefix for the whole name: one that may be an option that acts is one.
            if !name.is_empty()
                && TAR_ACTS.iter().any(|act| act.get(2..).is_some_and(|n| n.starts_with(name)))
            {
                analyzer.opaque(OpaqueKind::ProgramOption, text);
                continue;
            }
            let names = TAR_LONG.split_whitespace().map(|l| l.trim_end_matches(['=', '?']));
            let Some(name) = long_name(names, name) else {
                analyzer.opaque(OpaqueKind::ProgramOption, text);
                return;
            };
            let Some(entry) = TAR_LONG.split_whitespace().find(|l| l.trim_end_matches(['=', '?']) == name)
            else {
                analyzer.opaque(OpaqueKind::ProgramOption, text);
                return;
            };
            let value = if entry.ends_with('=') { take(&mut i, attached) } else { None };
            match (name, value) {
                ("create", _) => mode = Some('c'),
                ("extract" | "get", _) => mode = Some('x'),
                ("list" | "diff" | "compare", _) => mode = Some('t'),
                ("append" | "update" | "catenate" | "concatenate" | "delete", _) => mode = Some('r'),
                ("file", Some(v)) => archive = Some(v),
                ("directory", Some(v)) => folder = Some(v),
                ("files-from" | "exclude-from", Some(v)) => reads.push(v),
                ("listed-incremental", Some(v)) => {
                    analyzer.add_file(index, &v, FileRole::Write, false, "tar --listed-incremental");
                }
                ("remove-files", _) => removes_sources = true,
                _ => {}
            }
            continue;
        }
        let letters: Vec<char> = a.chars().skip(1).collect();
        for (at, c) in letters.iter().enumerate() {
            if TAR_ACTS.contains(&format!("-{c}").as_str()) {
                analyzer.opaque(OpaqueKind::ProgramOption, text);
            }
            if TAR_WITH_VALUE.contains(*c) {
                let attached: String = letters.get(at + 1..).unwrap_or(&[]).iter().collect();
                let value = take(&mut i, (!attached.is_empty()).then_some(attached.as_str()));
                match (c, value) {
                    ('f', Some(v)) => archive = Some(v),
                    ('C', Some(v)) => folder = Some(v),
                    ('T' | 'X', Some(v)) => reads.push(v),
                    ('g', Some(v)) => analyzer.add_file(index, &v, FileRole::Write, false, "tar -g"),
                    _ => {}
                }
                break;
            }
            if !TAR_FLAGS.contains(*c) {
                analyzer.opaque(OpaqueKind::ProgramOption, text);
                return;
            }
            match c {
                'c' | 'x' | 't' | 'r' | 'u' | 'A' | 'd' => {
                    mode = Some(if matches!(c, 'u' | 'A') { 'r' } else { *c })
                }
                _ => {}
            }
        }
    }
    for file in &reads {
        analyzer.add_file(index, file, FileRole::Read, false, "tar list of names");
    }
    let archive = archive.filter(|a| a.text != "-");
    // `-f host:file` (a colon before any slash) is a remote archive: tar runs rsh (or `--rsh-command`).
    if archive.as_ref().is_some_and(|a| a.text.split_once(':').is_some_and(|(host, _)| !host.contains('/'))) {
        analyzer.opaque(OpaqueKind::ProgramOption, format!("{text}: a remote archive runs rsh"));
    }
    // Operands are relative to `-C DIR` when one is given.
    let placed = |w: &Word| match &folder {
        Some(dir) if !w.text.starts_with('/') && !w.text.starts_with('~') => Word {
            text: format!("{}/{}", dir.text.trim_end_matches('/'), w.text),
            dynamic: w.dynamic || dir.dynamic,
        },
        _ => w.clone(),
    };
    match mode {
        Some('c') | Some('r') => {
            if let Some(archive) = &archive {
                analyzer.add_file(index, archive, FileRole::Write, false, "tar archive");
            }
            let role = if removes_sources { FileRole::Write } else { FileRole::Read };
            for operand in &operands {
                analyzer.add_file(index, &placed(operand), role, true, "tar operand");
            }
        }
        Some('x') => {
            if let Some(archive) = &archive {
                analyzer.add_file(index, archive, FileRole::Read, false, "tar archive");
            }
            let into = folder.clone().unwrap_or_else(|| Word::literal("."));
            analyzer.add_file(index, &into, FileRole::Write, true, "tar extracts into");
        }
        Some(_) => {
            if let Some(archive) = &archive {
                analyzer.add_file(index, archive, FileRole::Read, false, "tar archive");
            }
        }
        None => analyzer.opaque(OpaqueKind::ProgramOption, text),
    }
}
