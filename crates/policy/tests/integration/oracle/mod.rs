//! The execution oracle: commands the policy allows run under `strace -f`, confined by Landlock (writes
//! only inside a scratch folder, no TCP), in a scratch project with a scratch HOME; what really happened
//! — every program executed, every file read and written — is compared with what the analysis reported.
//! A program executed or a file written that was not reported fails the test; so does a file read
//! outside the project that was not reported. Run over the whole `tests/policy-corpus` (each folder's
//! policy) and over commands generated from the program table, judged by two policies: the shipped
//! default, and a wide one whose write root is the whole scratch folder, so that commands reaching
//! outside the project run too and their reports are checked.
// Test code: unwrap and panic are the assertions; it prints its counts and, on request, what it saw.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::print_stdout)]

mod compare;
mod differential;
mod generated;
mod implicit;
mod scratch;
mod trace;

use compare::Reported;
use implicit::IMPLICIT;
use portcullis_policy::{Decision, EvalContext, Policy};
use scratch::Scratch;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long one command may run (`tail -f` runs until stopped; the rest take milliseconds).
const LIMIT: Duration = Duration::from_secs(2);

/// Which policy judges a command.
#[derive(Clone)]
enum Judged {
    /// A corpus folder's own policy.
    Corpus(PathBuf),
    /// `tool-manifests/policies/default.json`.
    Shipped,
    /// Every table program allowed, the whole scratch folder a write root.
    Wide,
}

#[derive(Clone)]
struct Job {
    origin: String,
    command: String,
    judged: Judged,
}

#[derive(Default)]
struct Tally {
    evaluated: usize,
    allowed: usize,
    ran: usize,
    timed_out: usize,
    failures: Vec<String>,
    hits: Vec<usize>,
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn corpus_jobs() -> Vec<Job> {
    let mut folders: Vec<PathBuf> = std::fs::read_dir(repo().join("tests/policy-corpus"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    folders.sort();
    let mut jobs = Vec::new();
    for folder in folders {
        let name = folder.file_name().unwrap().to_string_lossy().into_owned();
        let cases: Vec<Value> =
            serde_json::from_str(&std::fs::read_to_string(folder.join("cases.json")).unwrap()).unwrap();
        for (i, case) in cases.iter().enumerate() {
            let Some(command) = case["shell"].as_str() else { continue };
            for judged in [Judged::Corpus(folder.join("policy.json")), Judged::Wide] {
                let which = if matches!(judged, Judged::Wide) { "wide" } else { "its policy" };
                jobs.push(Job {
                    origin: format!("{name}#{i} ({which})"),
                    command: command.to_owned(),
                    judged,
                });
            }
        }
    }
    jobs
}

fn generated_jobs() -> Vec<Job> {
    let mut jobs = Vec::new();
    for command in generated::commands() {
        for judged in [Judged::Shipped, Judged::Wide] {
            let which = if matches!(judged, Judged::Wide) { "wide" } else { "shipped" };
            jobs.push(Job { origin: format!("generated ({which})"), command: command.clone(), judged });
        }
    }
    jobs
}

/// The wide policy: every program of the table allowed, the whole scratch folder a write root, reads
/// beyond it prompted.
fn wide_policy(scratch: &Scratch) -> String {
    let mut programs: Vec<String> = portcullis_policy::shell::program_table()
        .into_iter()
        .map(|r| r.program)
        .chain(generated::PROGRAMS.iter().copied())
        .chain(generated::own_modules())
        .filter(|p| !p.starts_with("git "))
        .map(str::to_owned)
        .collect();
    programs.sort();
    programs.dedup();
    // And `env` and `cd` of the differential `folders` family (issue 51; not `unshare`: it writes its own
    // /proc/self/uid_map, which the oracle would count against it).
    programs.extend(["echo", "printf", "true", "xargs", "env", "cd", "mkdir"].map(String::from));
    serde_json::json!({
        "grants": [{ "name": "default", "allow": ["shell"] }],
        "commands": {
            "default": "prompt",
            "rules": [
                { "id": "table", "pattern": [programs], "decision": "allow" },
                { "id": "git", "pattern": ["git", ["diff", "log", "show", "status", "blame", "branch"]], "decision": "allow" }
            ]
        },
        "paths": {
            "roots": [{ "path": scratch.run.display().to_string(), "access": "write" }],
            "deny": [],
            "read_outside_roots": "prompt"
        }
    })
    .to_string()
}

/// Restricts the calling thread (and so every process it starts) to writing inside `root` and the null
/// device, with no TCP; fails the test when the kernel cannot enforce it.
fn confine(root: &Path) {
    use landlock::{
        ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr,
        RulesetStatus, path_beneath_rules,
    };
    let abi = ABI::V5;
    let status = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(abi))
        .unwrap()
        .handle_access(AccessNet::from_all(abi))
        .unwrap()
        .create()
        .unwrap()
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi)))
        .unwrap()
        .add_rules(path_beneath_rules([root], AccessFs::from_all(abi)))
        .unwrap()
        .add_rules(path_beneath_rules(["/dev/null"], AccessFs::from_file(abi)))
        .unwrap()
        .restrict_self()
        .expect("the execution oracle needs Landlock (ABI 5) to confine what it runs");
    assert_eq!(status.ruleset, RulesetStatus::FullyEnforced, "Landlock is not fully enforced");
}

/// Runs `jobs` on one thread with its own scratch folder, confined.
fn run_jobs(jobs: Vec<Job>) -> Tally {
    let scratch = Scratch::new();
    confine(&scratch.root);
    let shipped = std::fs::read_to_string(repo().join("tool-manifests/policies/default.json")).unwrap();
    let wide = wide_policy(&scratch);
    let mut tally = Tally { hits: vec![0; IMPLICIT.len()], ..Tally::default() };
    let mut loaded: Vec<(String, Policy)> = Vec::new();
    let ctx = EvalContext { cwd: scratch.proj.clone(), home: Some(scratch.home.clone()) };
    let mut run_before = std::collections::HashSet::new();
    let mut dirty = true;
    let mut placed: Option<String> = None;
    for job in jobs {
        let text = match &job.judged {
            Judged::Corpus(file) => std::fs::read_to_string(file).unwrap(),
            Judged::Shipped => shipped.clone(),
            Judged::Wide => wide.clone(),
        };
        // Judging changes nothing: the world is copied again only after a command ran in it.
        if dirty {
            scratch.reset(&text);
            dirty = false;
        } else if placed.as_deref() != Some(text.as_str()) {
            std::fs::write(scratch.policy_file(), &text).unwrap();
        }
        placed = Some(text.clone());
        if !loaded.iter().any(|(t, _)| *t == text) {
            let policy = Policy::load(&[scratch.policy_file()], &scratch.proj).unwrap();
            loaded.push((text.clone(), policy));
        }
        let policy = &loaded.iter().find(|(t, _)| *t == text).unwrap().1;
        let command = scratch.place(&job.command);
        let evaluation = policy.evaluate_command(&command, &ctx);
        tally.evaluated += 1;
        // `PORTCULLIS_ORACLE_SHOW=text`: what the analysis said about commands holding `text`.
        let shown = std::env::var("PORTCULLIS_ORACLE_SHOW").is_ok_and(|s| command.contains(&s));
        if shown {
            println!("{}: `{command}`: {:?} {:#?}", job.origin, evaluation.decision, evaluation.accesses);
        }
        if evaluation.decision != Decision::Allow {
            continue;
        }
        tally.allowed += 1;
        // What the analysis reports does not depend on the policy: a command allowed by both policies
        // runs once.
        if !run_before.insert(command.clone()) {
            continue;
        }
        dirty = true;
        let run = trace::run(&command, &scratch.proj, &scratch.env(), &scratch.log, LIMIT);
        tally.ran += 1;
        tally.timed_out += usize::from(run.timed_out);
        assert!(
            run.events.iter().any(|e| e.kind == trace::Kind::Read),
            "{}: `{command}` left no trace (status {:?})",
            job.origin,
            run.status
        );
        if shown {
            println!("{:#?}", run.events.iter().filter(|e| !e.path.starts_with("/usr")).collect::<Vec<_>>());
        }
        let found = compare::mismatches(&Reported::of(&evaluation), &run.events, &scratch, &mut tally.hits);
        for mismatch in found {
            tally.failures.push(format!("{}: `{}`: {mismatch}", job.origin, job.command));
        }
    }
    tally
}

/// Runs every job over two confined threads and sums what they found.
fn run_all(jobs: Vec<Job>) -> Tally {
    let half = jobs.len().div_ceil(2);
    let mut halves = vec![jobs[..half].to_vec(), jobs[half..].to_vec()];
    let second = halves.pop().unwrap();
    let first = halves.pop().unwrap();
    let a = std::thread::spawn(move || run_jobs(first));
    let b = std::thread::spawn(move || run_jobs(second));
    let (a, b) = (a.join().unwrap(), b.join().unwrap());
    let mut tally = Tally {
        evaluated: a.evaluated + b.evaluated,
        allowed: a.allowed + b.allowed,
        ran: a.ran + b.ran,
        timed_out: a.timed_out + b.timed_out,
        failures: a.failures,
        hits: a.hits.iter().zip(&b.hits).map(|(x, y)| x + y).collect(),
    };
    tally.failures.extend(b.failures);
    tally
}

#[test]
fn allowed_commands_do_only_what_the_analysis_reported() {
    let mut jobs = corpus_jobs();
    let corpus = jobs.len();
    jobs.extend(generated_jobs());
    let tally = run_all(jobs);
    println!(
        "oracle: {} commands judged ({corpus} from the corpus), {} allowed, {} distinct ones run under strace ({} \
         stopped at the time limit), {} mismatches",
        tally.evaluated,
        tally.allowed,
        tally.ran,
        tally.timed_out,
        tally.failures.len()
    );
    for (row, hits) in IMPLICIT.iter().zip(&tally.hits) {
        println!("implicit {:>6}  {} {:?} {} ({})", hits, row.program, row.kind, row.pattern, row.why);
    }
    assert!(tally.failures.is_empty(), "{} mismatches:\n{}", tally.failures.len(), tally.failures.join("\n"));
    assert!(tally.ran >= 1000, "only {} commands ran", tally.ran);
    let unused: Vec<&str> = IMPLICIT
        .iter()
        .zip(&tally.hits)
        .filter(|(r, h)| **h == 0 && !r.optional)
        .map(|(r, _)| r.pattern)
        .collect();
    assert!(unused.is_empty(), "implicit rows no run needed: {unused:?}");
}
