//! What one row of the program table says about a program: its options, what they do besides reading
//! (`Effect`), and what its operands are (`Operands`); and what parsing a command against its row found
//! (`Parsed`). A leaf: the rows (`program_specs`, `program_specs_files`) are written in it, the row
//! parser (`options`) makes a `Parsed` and `file_operands` turns it into files.

use super::words::Word;

/// What an option does besides reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Effect {
    /// Its value is a file written.
    Writes,
    /// Its value is a folder whose tree is written (`unzip -d`, `cargo --target-dir`).
    WritesTree,
    /// Its value is a file read (`grep -f`, `wc --files0-from`, `touch -r`).
    Reads,
    /// Its value is a folder whose tree is read (`make -I`, `jq -L`).
    ReadsTree,
    /// Code in the file or folder its value names runs (`make -C`, `make -f`, `cargo --manifest-path`,
    /// `git -C`).
    RunsCode,
    /// It runs a program or changes the system or the repository.
    Acts,
    /// The pattern or program comes from this option (`grep -e`, `jq -f`), so the first operand is a file.
    PatternGiven,
    /// Its value is the destination folder (`cp -t DIR`): every operand is a source.
    Target,
    /// The operands are written too (`yq -i`, `sed -i` is handled by its own module).
    InPlace,
    /// The operands after it are not files (`jq --args`).
    OperandsNotFiles,
    /// Sources become links (`cp -s`, `cp -l`): writing through them later writes the source, so
    /// sources are judged as written.
    Links,
    /// Only lists or tests an archive (`unzip -l`): nothing is extracted.
    NoExtract,
    /// `chmod --reference=FILE`: no mode operand; every operand is a file.
    NoModeOperand,
}

/// What a program's operands are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Operands {
    /// Not files (`echo`, `which`, targets of `make`, names of `cargo test`).
    NotFiles,
    /// Files read; trees when a recursive option is given.
    Read,
    /// Trees read (`rg`, `du`, `tree`).
    ReadTree,
    /// A pattern, then files read (`grep`, `rg`, `ag`), unless an option gave the pattern.
    PatternThenRead,
    /// A program, then files read (`jq FILTER FILE...`), unless an option gave the program.
    ProgramThenRead,
    /// `uniq [IN [OUT]]`: the second is written.
    SecondWritten,
    /// `date [+FORMAT]`: any other operand sets the clock.
    FormatOnly,
    /// `git branch NAME`: without a listing option an operand creates a branch.
    CreatesUnlessListing,
    /// Files written (`touch`, `mkdir`, `rm`, `rmdir`); trees when a recursive option is given.
    Written,
    /// A mode or owner, then files written (`chmod`, `chown`, `chgrp`).
    FirstThenWritten,
    /// Sources read, the last operand (or the `-t` folder) written (`cp`, `install`).
    CopyToLast,
    /// Sources moved away (written), the last operand (or the `-t` folder) written (`mv`).
    MoveToLast,
    /// `ln TARGET... LINK`: the link is written; a target is judged as written too (writing through
    /// the link writes it), from the working directory and, for `-s`, from the link's folder.
    Link,
    /// `zip ARCHIVE FILE...`: the archive written, the files read.
    ArchiveFirstWritten,
    /// `unzip ARCHIVE [MEMBER...]`: the archive read, the tree of the working folder (or `-d`) written.
    ArchiveExtract,
    /// `git log|show`: revisions and pathspecs inside the repository; with `--no-index` files read.
    GitRevisions,
    /// `git diff`: revisions and pathspecs, but given paths outside the repository git compares them as
    /// files (as with `--no-index`): every operand is judged as a file read.
    GitDiff,
    /// `make` targets, where a `VAR=value` override can change which programs run.
    MakeTargets,
}

/// One program's options (GNU getopt style). Long options: `name` is a flag, `name=` takes a value
/// (attached or the next word), `name?` takes an optional attached value, `name==` takes two words
/// (`jq --arg NAME VALUE`; the effect applies to the second). Unambiguous abbreviations of long options,
/// which getopt accepts, are not listed, so they fail closed.
pub(super) struct Spec {
    pub(super) program: &'static str,
    pub(super) flags: &'static str,
    /// Short options taking a value, attached (`-n5`) or the next word (`-n 5`).
    pub(super) with_value: &'static str,
    /// Short options taking an optional value, attached only (`git diff -M50%`, `date -Iseconds`).
    pub(super) attached_value: &'static str,
    /// `-5` (head, tail, grep, diff, git log) is a number option.
    pub(super) digits: bool,
    /// Space-separated.
    pub(super) long: &'static str,
    /// Options (`-o`, `--output`) with an effect; an option may have several.
    pub(super) effects: &'static [(&'static str, Effect)],
    pub(super) operands: Operands,
    /// Options that make operand trees read or written as a whole (`-r`, `-R`, `--recursive`).
    pub(super) recursive: &'static [&'static str],
    /// Letters that make a word starting with `-` an operand, not options (`chmod -w FILE`).
    pub(super) dash_operands: &'static str,
    /// Options that make a walk follow the symbolic links below its trees (`grep -R`, `rg -L`); [`ALWAYS`]
    /// for a program that follows them unless told not to (`zip -r`, `diff -r`).
    pub(super) follows_links: &'static [&'static str],
}

/// `recursive` of a program that always walks the trees its operands name (`rg`, `ag`, `find`).
pub(super) const ALWAYS: &[&str] = &["*"];

pub(super) const fn spec(program: &'static str, flags: &'static str, with_value: &'static str) -> Spec {
    Spec {
        program,
        flags,
        with_value,
        attached_value: "",
        digits: false,
        long: "",
        effects: &[],
        operands: Operands::Read,
        recursive: &[],
        dash_operands: "",
        follows_links: &[],
    }
}

/// What parsing a command against its row found: the operands, the options given, and the option
/// values that name files.
#[derive(Debug, Default)]
pub(super) struct Parsed<'a> {
    pub(super) operands: Vec<&'a Word>,
    /// Every option given, as `-x` or `--name`.
    pub(super) given: Vec<String>,
    /// Option values naming files, with the option's effect and its name.
    pub(super) values: Vec<(Word, Effect, String)>,
    /// Operands from this position on are not files (`jq --args`, `zip -d`).
    pub(super) files_end: Option<usize>,
    pub(super) listing: bool,
}

impl Parsed<'_> {
    pub(super) fn has(&self, effect: Effect, spec: &Spec) -> bool {
        self.given.iter().any(|g| spec.effects.iter().any(|(o, e)| o == g && *e == effect))
    }
}
