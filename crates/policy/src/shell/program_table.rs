//! The program table as plain data for what enumerates it rather than parses with it: the execution
//! oracle builds its generated commands (every program × its options × paths) from these rows, so a row
//! added to the table is exercised without a second list to keep in step.

use super::program_specs;
use super::spec::Spec;

/// One program's row: its name, its options, and what its operands are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramRow {
    /// The program (`cat`), or a git subcommand (`git diff`).
    pub program: &'static str,
    pub options: Vec<OptionRow>,
    /// What the operands are, as the table names it (`Read`, `PatternThenRead`, `CopyToLast`...).
    pub operands: String,
    /// Options that make the operands whole trees (`*` when the program always walks them).
    pub recursive: Vec<&'static str>,
    /// `-5` is a number option (head, tail, grep, diff, git log).
    pub digits: bool,
}

/// One option of a row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionRow {
    /// As a user writes it: `-n`, `--lines`.
    pub spelling: String,
    pub value: OptionValue,
    /// What the option does besides reading, as the table names it (`Writes`, `Reads`, `Acts`...).
    pub effects: Vec<String>,
}

/// Whether and how an option takes a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionValue {
    /// A flag.
    None,
    /// Attached or the next word (`-n5`, `-n 5`, `--lines=5`, `--lines 5`).
    Required,
    /// Only attached, and optional (`--color`, `--color=never`, `-M50%`).
    OptionalAttached,
    /// Two words (`jq --arg NAME VALUE`).
    TwoWords,
}

/// Every row of the table, git subcommands under their own names.
pub fn program_table() -> Vec<ProgramRow> {
    let mut rows: Vec<ProgramRow> = program_specs::all().map(|spec| row(spec.program, spec)).collect();
    for sub in ["diff", "log", "status", "blame", "branch"] {
        if let Some(spec) = program_specs::git(sub) {
            let name = match sub {
                "diff" => "git diff",
                "log" => "git log",
                "status" => "git status",
                "blame" => "git blame",
                _ => "git branch",
            };
            rows.push(row(name, spec));
        }
    }
    rows
}

fn row(program: &'static str, spec: &Spec) -> ProgramRow {
    let effects_of = |spelling: &str| -> Vec<String> {
        spec.effects.iter().filter(|(o, _)| *o == spelling).map(|(_, e)| format!("{e:?}")).collect()
    };
    let mut options = Vec::new();
    let mut short = |letters: &str, value: OptionValue| {
        for letter in letters.chars() {
            let spelling = format!("-{letter}");
            let effects = effects_of(&spelling);
            options.push(OptionRow { spelling, value, effects });
        }
    };
    short(spec.flags, OptionValue::None);
    short(spec.with_value, OptionValue::Required);
    short(spec.attached_value, OptionValue::OptionalAttached);
    for word in spec.long.split_whitespace() {
        let (name, value) = if let Some(name) = word.strip_suffix("==") {
            (name, OptionValue::TwoWords)
        } else if let Some(name) = word.strip_suffix('=') {
            (name, OptionValue::Required)
        } else if let Some(name) = word.strip_suffix('?') {
            (name, OptionValue::OptionalAttached)
        } else {
            (word, OptionValue::None)
        };
        let spelling = format!("--{name}");
        let effects = effects_of(&spelling);
        options.push(OptionRow { spelling, value, effects });
    }
    ProgramRow {
        program,
        options,
        operands: format!("{:?}", spec.operands),
        recursive: spec.recursive.to_vec(),
        digits: spec.digits,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_carry_each_option_with_its_value_and_effects() {
        let table = program_table();
        let sort = table.iter().find(|r| r.program == "sort").unwrap();
        let output = sort.options.iter().find(|o| o.spelling == "--output").unwrap();
        assert_eq!(output.value, OptionValue::Required);
        assert_eq!(output.effects, vec!["Writes".to_owned()]);
        let o = sort.options.iter().find(|o| o.spelling == "-o").unwrap();
        assert_eq!(o.effects, vec!["Writes".to_owned()]);
        let jq = table.iter().find(|r| r.program == "jq").unwrap();
        let arg = jq.options.iter().find(|o| o.spelling == "--arg").unwrap();
        assert_eq!(arg.value, OptionValue::TwoWords);
        assert!(table.iter().any(|r| r.program == "git log" && r.operands == "GitRevisions"));
        assert!(table.iter().any(|r| r.program == "rg" && r.recursive == vec!["*"]));
    }
}
