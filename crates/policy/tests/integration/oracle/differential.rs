//! The differential fuzzer (issue 39): bash generated from a grammar of the places where bash evaluates
//! text at run time — heredoc bodies, every parameter-expansion operator, arithmetic contexts,
//! backquotes, assignments and environment prefixes, tildes — with payloads (`touch M7`, `printf x >
//! M7`...) hidden in them. Each script is judged by the oracle's wide policy; what the judge allows runs
//! under strace, and everything bash did beyond the judge's claim (a program it did not list, a file
//! written it did not report) is a failure. Targets are grammar families; a seed makes a run
//! reproducible; a failing script is shrunk to a small one.
//!
//! Smoke form (CI): `differential_smoke` runs every target for a fixed seed and replays the committed
//! failures of earlier runs (`tests/shell-differential/regressions.json`). Long form (outside CI):
//! `PORTCULLIS_FUZZ_TARGET=heredocs PORTCULLIS_FUZZ_SECONDS=600 cargo test --release -p portcullis-policy
//! --test integration differential_long -- --ignored --nocapture` (`PORTCULLIS_FUZZ_SEED` to vary the
//! start; failing scripts are printed, shrunk, and written to `PORTCULLIS_FUZZ_OUT`).

use super::{Job, Judged, Tally, repo, run_all};
use std::time::{Duration, Instant};

/// The grammar families.
pub const TARGETS: &[&str] = &[
    "heredocs",
    "expansions",
    "arithmetic",
    "environment",
    "tildes",
    "braces",
    "abbreviations",
    "folders",
    "names",
    "mixed",
];

/// xorshift64*: small, seedable, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
    fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
}

/// One script generator: the payload counter makes every marker file distinct.
struct Grammar {
    rng: Rng,
    marker: usize,
}

const OPERATORS: &[&str] = &[
    ":-", "-", ":=", "=", ":+", "+", ":?", "?", "#", "##", "%", "%%", "/a/", "//a/", "/#a/", "/%a/", "^",
    "^^", ",", ",,",
];
const TRANSFORMS: &[&str] = &["@Q", "@E", "@P", "@A", "@a", "@U", "@L", "@K"];

impl Grammar {
    fn new(seed: u64) -> Self {
        Grammar { rng: Rng(seed | 1), marker: 0 }
    }

    /// A command that leaves a trace bash cannot hide: a marker file written, by a program the wide policy
    /// allows.
    fn payload(&mut self) -> String {
        self.marker += 1;
        let m = self.marker;
        match self.rng.below(5) {
            0 => format!("touch M{m}"),
            1 => format!("printf x > M{m}"),
            2 => format!("echo x >> M{m}"),
            3 => format!("cat a.txt > M{m}"),
            _ => format!("cp b.txt M{m}"),
        }
    }

    /// A substitution of `code` in one of its forms.
    fn substitution(&mut self, code: &str) -> String {
        match self.rng.below(4) {
            0 => format!("`{code}`"),
            1 => format!("$({code})"),
            2 => format!("`echo \\`{code}\\``"),
            _ => format!("\"$({code})\""),
        }
    }

    fn heredoc(&mut self) -> String {
        let code = self.payload();
        let hidden = self.substitution(&code);
        let delimiter = self.rng.pick(&["EOF", "'EOF'", "\"EOF\"", "\\EOF", "E\"O\"F", "END"]);
        let end = delimiter.replace(['\'', '"', '\\'], "");
        let dash = self.rng.chance(3);
        let tab = if dash { "\t" } else { "" };
        let line = match self.rng.below(6) {
            0 => hidden.clone(),
            1 => format!("text {hidden} text"),
            2 => format!("${{x:-{hidden}}}"),
            3 => format!("$((1 + $(echo 1; {code})))"),
            4 => format!("\\`{code}\\` and {hidden}"),
            _ => format!("line\n{tab}{hidden}"),
        };
        let reader = self.rng.pick(&["cat", "cat > out.txt", "grep -c x", "wc -l", "cat | cat"]);
        let op = if dash { "<<-" } else { "<<" };
        match self.rng.below(5) {
            0 => format!("cat <<< \"{line}\""),
            _ => format!("{reader} {op}{delimiter}\n{tab}{line}\n{tab}{end}"),
        }
    }

    fn expansion(&mut self) -> String {
        let code = self.payload();
        let hidden = self.substitution(&code);
        let op = self.rng.pick(OPERATORS);
        let inner = if self.rng.chance(4) { format!("${{z{op}{hidden}}}") } else { hidden.clone() };
        let word = format!("${{y{op}{inner}}}");
        match self.rng.below(9) {
            0 => format!("x={word}"),
            1 => format!("echo \"{word}\""),
            2 => format!("[[ {word} ]]"),
            3 => format!("[[ a == {word} ]]"),
            4 => format!("case {word} in a) ;; esac"),
            5 => format!(": {word}"),
            6 => {
                let transform = self.rng.pick(TRANSFORMS);
                format!("x='$({code})'; echo ${{x{transform}}}")
            }
            7 => format!("x='a[$({code})]'; echo ${{!x}}"),
            _ => format!("y=1; echo {word}"),
        }
    }

    fn arithmetic(&mut self) -> String {
        let code = self.payload();
        let value = match self.rng.below(3) {
            0 => format!("'a[$({code})]'"),
            1 => format!("'$({code})'"),
            _ => "3".to_owned(),
        };
        let use_ = match self.rng.below(13) {
            0 => "((x))".to_owned(),
            1 => "echo $((x))".to_owned(),
            2 => "echo $((x + 1))".to_owned(),
            3 => "[[ x -eq 1 ]]".to_owned(),
            4 => "[[ $x -gt 1 ]]".to_owned(),
            5 => "for ((i=x; i<1; i++)); do :; done".to_owned(),
            6 => "let y=x".to_owned(),
            7 => "echo ${a[x]}".to_owned(),
            8 => "a[x]=1".to_owned(),
            9 => "[[ -v a[x] ]]".to_owned(),
            10 => "declare -i n; n=x".to_owned(),
            11 => "echo $[x]".to_owned(),
            _ => "s=abc; echo ${s:x}".to_owned(),
        };
        let assign = match self.rng.below(4) {
            0 => format!("x={value}"),
            1 => format!("read -r x <<< {value}"),
            2 => format!("printf -v x %s {value}"),
            _ => format!("declare x={value}"),
        };
        format!("{assign}; {use_}")
    }

    fn environment(&mut self) -> String {
        let code = self.payload();
        let (setup, prefix, run) = match self.rng.below(7) {
            0 => (
                format!("printf '[core]\\n\\tfsmonitor = {code}\\n' > .gitconfig"),
                "HOME=.".to_owned(),
                "git status",
            ),
            1 => (
                format!("mkdir -p cfg/git; printf '[core]\\n\\tfsmonitor = {code}\\n' > cfg/git/config"),
                "XDG_CONFIG_HOME=cfg".to_owned(),
                "git status",
            ),
            2 => (format!("echo '{code}' > env.sh"), "BASH_ENV=env.sh".to_owned(), "bash -c ls"),
            3 => (String::new(), format!("PS4='$({code})'"), "bash -xc ls"),
            4 => (String::new(), "GIT_TRACE=M99".to_owned(), "git status"),
            5 => (format!("echo '{code}' > p.sh"), "PAGER='sh p.sh'".to_owned(), "git log -1"),
            _ => (String::new(), format!("PROMPT_COMMAND='{code}'"), "bash -ic true"),
        };
        let how = match self.rng.below(4) {
            0 => format!("{prefix} {run}"),
            1 => format!("export {prefix}; {run}"),
            2 => format!("{prefix}; {run}"),
            _ => format!("env {prefix} {run}"),
        };
        if setup.is_empty() { how } else { format!("{setup}; {how}") }
    }

    fn tildes(&mut self) -> String {
        self.marker += 1;
        let m = self.marker;
        match self.rng.below(6) {
            0 => format!("PWD=@OUT@; echo x > ~+/M{m}"),
            1 => format!("HOME=@OUT@; echo x > ~/M{m}"),
            2 => format!("OLDPWD=@OUT@; echo x > ~-/M{m}"),
            3 => format!("cd @OUT@ && echo x > ~+/M{m}"),
            4 => format!("for PWD in @OUT@; do echo x > ~+/M{m}; done"),
            _ => format!("read PWD <<< @OUT@; echo x > ~+/M{m}"),
        }
    }

    /// Issue 51: option and command words built by brace expansion.
    fn braces(&mut self) -> String {
        self.marker += 1;
        let m = self.marker;
        match self.rng.below(9) {
            0 => format!("find . -name a.txt {{-exec,touch}} M{m} \\;"),
            1 => format!("sort {{-o,M{m}}} a.txt"),
            2 => format!("{{touch,M{m}}}"),
            3 => format!("cp {{b.txt,M{m}}}"),
            4 => format!("uniq {{a.txt,M{m}}}"),
            5 => format!("sed -n {{-e,'w M{m}'}} a.txt"),
            6 => format!("xxd {{a.txt,M{m}}}"),
            7 => format!("touch M{m}{{a,b}} M{m}{{1..2}}"),
            _ => format!("git log -1 {{--output,M{m}}}"),
        }
    }

    /// Issue 51: long options abbreviated as getopt_long reads them.
    fn abbreviations(&mut self) -> String {
        self.marker += 1;
        let m = self.marker;
        match self.rng.below(8) {
            0 => format!("sort --outp=M{m} a.txt"),
            1 => format!("sort --out M{m} a.txt"),
            2 => format!("sed -n --expr='w M{m}' a.txt"),
            3 => format!("sed -n --e='1w M{m}' a.txt"),
            4 => format!("tee --app M{m} < a.txt"),
            5 => format!("uniq --ski=1 a.txt M{m}"),
            6 => format!("timeout --sig=KILL 5 touch M{m}"),
            _ => format!("git log -1 --outp=M{m}"),
        }
    }

    /// Issue 51: wrappers that set the folder their command runs in.
    fn folders(&mut self) -> String {
        let code = self.payload();
        let run = match self.rng.below(6) {
            0 => format!("env -C d {code}"),
            1 => format!("env --chdir=d sh -c '{code}'"),
            2 => format!("env --ch=d sh -c '{code}'"),
            3 => format!("env -iC d sh -c '{code}'"),
            4 => format!("unshare --wd=d sh -c '{code}'"),
            _ => format!("cd d && {code}"),
        };
        format!("mkdir -p d; cp a.txt b.txt d/; {run}")
    }

    /// Issue 51: names bash evaluates in builtins: a subscript there runs its substitution.
    fn names(&mut self) -> String {
        let code = self.payload();
        let name = format!("'a[$({code})]'");
        match self.rng.below(10) {
            0 => format!("test -v {name}"),
            1 => format!("printf -v {name} x"),
            2 => format!("read {name} <<< x"),
            3 => format!("unset {name}"),
            4 => format!("declare {name}"),
            5 => format!("export {name}"),
            6 => format!("readonly 'a[$({code})]=1'"),
            7 => format!("mapfile {name} < a.txt"),
            8 => format!("getopts ab {name}"),
            _ => format!("true & wait -p {name}"),
        }
    }

    fn fragment(&mut self, target: &str) -> String {
        match target {
            "braces" => self.braces(),
            "abbreviations" => self.abbreviations(),
            "folders" => self.folders(),
            "names" => self.names(),
            "heredocs" => self.heredoc(),
            "expansions" => self.expansion(),
            "arithmetic" => self.arithmetic(),
            "environment" => self.environment(),
            "tildes" => self.tildes(),
            _ => {
                let families = [
                    "heredocs",
                    "expansions",
                    "arithmetic",
                    "environment",
                    "tildes",
                    "braces",
                    "abbreviations",
                    "folders",
                    "names",
                ];
                let first = families[self.rng.below(families.len())];
                let second = families[self.rng.below(families.len())];
                let (a, b) = (self.fragment(first), self.fragment(second));
                match self.rng.below(4) {
                    0 => format!("{a}; {b}"),
                    1 => format!("({a}) && {b}"),
                    2 => format!("{{ {a}; }} | cat; {b}"),
                    _ => format!("bash -c {}", shell_quote(&format!("{a}; {b}"))),
                }
            }
        }
    }
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// `count` scripts of `target` from `seed`.
pub fn scripts(target: &str, seed: u64, count: usize) -> Vec<String> {
    let mut grammar = Grammar::new(seed ^ (target.len() as u64 * 0x9e37_79b9));
    (0..count).map(|_| grammar.fragment(target)).collect()
}

fn jobs(origin: &str, scripts: &[String]) -> Vec<Job> {
    scripts
        .iter()
        .map(|command| Job { origin: origin.to_owned(), command: command.clone(), judged: Judged::Wide })
        .collect()
}

/// The committed failures of earlier runs, replayed in every smoke run.
fn regressions() -> Vec<String> {
    let file = repo().join("tests/shell-differential/regressions.json");
    let text = std::fs::read_to_string(file).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// A failing script made small: statements, then words, dropped while the failure stays.
fn shrink(script: &str) -> String {
    let fails = |s: &str| !run_all(jobs("shrink", &[s.to_owned()])).failures.is_empty();
    let mut best = script.to_owned();
    for separator in ["; ", " "] {
        let mut i = 0;
        loop {
            let parts: Vec<&str> = best.split(separator).collect();
            if i >= parts.len() || parts.len() < 2 {
                break;
            }
            let candidate: String = parts
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, p)| *p)
                .collect::<Vec<_>>()
                .join(separator);
            if fails(&candidate) {
                best = candidate;
            } else {
                i += 1;
            }
        }
    }
    best
}

fn report(label: &str, tally: &Tally, scripts: usize, elapsed: Duration) {
    println!(
        "differential {label}: {scripts} scripts, {} allowed, {} run under strace, {} disagreements, {:.1} scripts/s",
        tally.allowed,
        tally.ran,
        tally.failures.len(),
        scripts as f64 / elapsed.as_secs_f64().max(0.001)
    );
}

#[test]
fn differential_smoke() {
    let mut all = Vec::new();
    for target in TARGETS {
        let generated = scripts(target, 39, 60);
        all.extend(jobs(&format!("{target} (seed 39)"), &generated));
    }
    let replayed = regressions();
    all.extend(jobs("regression", &replayed));
    let count = all.len();
    let started = Instant::now();
    let tally = run_all(all);
    report("smoke", &tally, count, started.elapsed());
    assert!(
        tally.failures.is_empty(),
        "{} disagreements:\n{}",
        tally.failures.len(),
        tally.failures.join("\n")
    );
    // The grammar must reach bash at all: a judge prompting for everything would pass trivially.
    assert!(tally.ran >= 40, "only {} scripts ran", tally.ran);
}

#[test]
#[ignore = "long: run outside CI with PORTCULLIS_FUZZ_SECONDS"]
fn differential_long() {
    let seconds: u64 =
        std::env::var("PORTCULLIS_FUZZ_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(60);
    let seed: u64 = std::env::var("PORTCULLIS_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(1);
    let chosen = std::env::var("PORTCULLIS_FUZZ_TARGET").ok();
    let out =
        std::env::var("PORTCULLIS_FUZZ_OUT").map_or_else(|_| repo().join("target/differential"), Into::into);
    std::fs::create_dir_all(&out).unwrap();
    let targets: Vec<&str> =
        TARGETS.iter().copied().filter(|t| chosen.as_deref().is_none_or(|c| c == *t)).collect();
    let mut failures = Vec::new();
    for target in targets {
        let started = Instant::now();
        let (mut total, mut batch, mut tally_sum) = (0usize, 0u64, Tally::default());
        while started.elapsed() < Duration::from_secs(seconds) {
            let generated = scripts(target, seed.wrapping_add(batch * 7919), 200);
            batch += 1;
            total += generated.len();
            let tally = run_all(jobs(target, &generated));
            tally_sum.allowed += tally.allowed;
            tally_sum.ran += tally.ran;
            for failure in tally.failures {
                let script = failure.split('`').nth(1).unwrap_or_default().to_owned();
                let small = shrink(&script);
                println!("FAILURE ({target}): {failure}\n  shrunk: {small:?}");
                failures.push(small.clone());
                tally_sum.failures.push(small);
            }
        }
        report(target, &tally_sum, total, started.elapsed());
    }
    std::fs::write(out.join("failures.json"), serde_json::to_string_pretty(&failures).unwrap()).unwrap();
    assert!(failures.is_empty(), "{} disagreements (in {})", failures.len(), out.display());
}
