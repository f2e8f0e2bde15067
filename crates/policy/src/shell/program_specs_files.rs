//! Rows of the program table (see `shell/program_specs.rs`) for programs that change files — copy, move,
//! link, create, delete, re-permission, archive — and for build tools whose options name the folder
//! whose code they run.

use super::spec::{ALWAYS, Effect, Operands, Spec, spec};

pub(super) const SPECS: &[Spec] = &[
    Spec {
        long: "archive attributes-only backup? copy-contents no-dereference debug force interactive link \
dereference no-clobber preserve? no-preserve= parents recursive reflink? remove-destination sparse= \
strip-trailing-slashes symbolic-link suffix= target-directory= no-target-directory update? verbose \
keep-directory-symlink one-file-system context? help version",
        effects: &[
            ("-t", Effect::Target),
            ("--target-directory", Effect::Target),
            ("-s", Effect::Links),
            ("--symbolic-link", Effect::Links),
            ("-l", Effect::Links),
            ("--link", Effect::Links),
        ],
        operands: Operands::CopyToLast,
        recursive: &["-a", "-r", "-R", "--recursive", "--archive"],
        follows_links: &["-L", "--dereference"],
        ..spec("cp", "abdfHilLnPpRrsTuvxZ", "St")
    },
    Spec {
        long: "backup? force interactive no-clobber no-copy strip-trailing-slashes suffix= target-directory= \
no-target-directory update? verbose context exchange debug help version",
        effects: &[("-t", Effect::Target), ("--target-directory", Effect::Target)],
        operands: Operands::MoveToLast,
        recursive: ALWAYS,
        ..spec("mv", "bfinTuvZ", "St")
    },
    Spec {
        long: "backup? compare directory group= mode= owner= preserve-timestamps strip suffix= \
target-directory= no-target-directory verbose preserve-context context? debug help version \
strip-program=",
        effects: &[
            ("-t", Effect::Target),
            ("--target-directory", Effect::Target),
            ("-d", Effect::InPlace),
            ("--directory", Effect::InPlace),
            ("--strip-program", Effect::Acts),
            // Runs `strip` on the installed file.
            ("-s", Effect::Acts),
            ("--strip", Effect::Acts),
        ],
        operands: Operands::CopyToLast,
        ..spec("install", "bCcDdpsTvZ", "gmoSt")
    },
    Spec {
        long: "backup? directory force interactive logical no-dereference physical relative symbolic suffix= \
target-directory= no-target-directory verbose help version",
        effects: &[("-t", Effect::Target), ("--target-directory", Effect::Target)],
        operands: Operands::Link,
        ..spec("ln", "bdFfinLPrsTv", "St")
    },
    Spec {
        long: "no-create date= no-dereference reference= time= help version",
        effects: &[("-r", Effect::Reads), ("--reference", Effect::Reads)],
        operands: Operands::Written,
        ..spec("touch", "acfhm", "drt")
    },
    Spec {
        long: "mode= parents verbose context? help version",
        operands: Operands::Written,
        ..spec("mkdir", "pvZ", "m")
    },
    Spec {
        long: "force interactive? one-file-system no-preserve-root preserve-root? recursive dir verbose help \
version",
        operands: Operands::Written,
        recursive: &["-r", "-R", "--recursive"],
        ..spec("rm", "fiIrRdv", "")
    },
    Spec {
        long: "ignore-fail-on-non-empty parents verbose help version",
        operands: Operands::Written,
        ..spec("rmdir", "pv", "")
    },
    Spec {
        long: "changes silent quiet verbose no-preserve-root preserve-root reference= recursive help version",
        effects: &[("--reference", Effect::Reads), ("--reference", Effect::NoModeOperand)],
        operands: Operands::FirstThenWritten,
        recursive: &["-R", "--recursive"],
        dash_operands: "rwxXst",
        ..spec("chmod", "cfvR", "")
    },
    Spec {
        long: "changes silent quiet verbose dereference no-dereference from= no-preserve-root preserve-root \
reference= recursive help version",
        effects: &[("--reference", Effect::Reads), ("--reference", Effect::NoModeOperand)],
        operands: Operands::FirstThenWritten,
        recursive: &["-R", "--recursive"],
        follows_links: &["-L"],
        ..spec("chown", "cfvhRHLP", "")
    },
    Spec {
        long: "changes silent quiet verbose dereference no-dereference no-preserve-root preserve-root \
reference= recursive help version",
        effects: &[("--reference", Effect::Reads), ("--reference", Effect::NoModeOperand)],
        operands: Operands::FirstThenWritten,
        recursive: &["-R", "--recursive"],
        follows_links: &["-L"],
        ..spec("chgrp", "cfvhRHLP", "")
    },
    Spec {
        long: "all apparent-size block-size= bytes total dereference-args files0-from= human-readable inodes \
dereference count-links max-depth= no-dereference null separate-dirs si summarize threshold= time? \
time-style= exclude-from= exclude= one-file-system help version",
        effects: &[
            ("--files0-from", Effect::Reads),
            ("-X", Effect::Reads),
            ("--exclude-from", Effect::Reads),
        ],
        operands: Operands::ReadTree,
        follows_links: &["-L", "--dereference"],
        ..spec("du", "0abcDhHklLmPsSx", "BdtX")
    },
    Spec {
        digits: true,
        long: "recurse-paths quiet verbose junk-paths update freshen move delete test \
symlinks exclude= include= temp-path= output-file= password= compression-method= suffixes= \
no-dir-entries no-extra fix fixfix grow encrypt help version",
        effects: &[
            // A folder the temporary archive is written in.
            ("-b", Effect::WritesTree),
            ("--temp-path", Effect::WritesTree),
            ("-O", Effect::Writes),
            ("--output-file", Effect::Writes),
            ("-m", Effect::InPlace),
            ("--move", Effect::InPlace),
            ("-d", Effect::OperandsNotFiles),
            ("--delete", Effect::OperandsNotFiles),
            ("-T", Effect::Acts),
            ("--test", Effect::Acts),
            ("-@", Effect::Acts),
        ],
        operands: Operands::ArchiveFirstWritten,
        // `-R` walks the working folder for patterns the operands give: not in the table, so it prompts.
        recursive: &["-r", "--recurse-paths"],
        follows_links: ALWAYS,
        ..spec("zip", "qvjrufmdTDXyglAcFSe@", "bOPZnxit")
    },
    Spec {
        long: "help version",
        effects: &[
            ("-d", Effect::WritesTree),
            ("-l", Effect::NoExtract),
            ("-t", Effect::NoExtract),
            ("-v", Effect::NoExtract),
            ("-z", Effect::NoExtract),
            ("-p", Effect::NoExtract),
            ("-Z", Effect::NoExtract),
        ],
        operands: Operands::ArchiveExtract,
        ..spec("unzip", "lptvzZoanqjCLMVXKUufDTbB", "dxPOI")
    },
    Spec {
        long: "lib bins bin? examples example? tests test? benches bench? all-targets package= workspace all \
exclude= features= all-features no-default-features release profile= target= target-dir= jobs= \
keep-going message-format= color= quiet verbose locked offline frozen timings? manifest-path= \
lockfile-path= ignore-rust-version future-incompat-report no-run no-fail-fast doc unit-graph \
build-plan artifact-dir= out-dir= config= check allow-dirty allow-staged fix broken-code no-deps \
open document-private-items list explain= all-features help version",
        effects: &[
            ("--target-dir", Effect::WritesTree),
            ("--artifact-dir", Effect::WritesTree),
            ("--out-dir", Effect::WritesTree),
            ("--manifest-path", Effect::RunsCode),
            ("--lockfile-path", Effect::Writes),
            ("-C", Effect::RunsCode),
            ("--config", Effect::Acts),
            ("-Z", Effect::Acts),
        ],
        operands: Operands::NotFiles,
        ..spec("cargo", "qvrhV", "pFjZC")
    },
    Spec {
        long: "prefix= workspace= workspaces include-workspace-root if-present silent loglevel= ignore-scripts \
no-audit no-fund audit fund save save-dev save-exact no-save foreground-scripts yes color= json \
parseable long dry-run help version",
        effects: &[
            ("--prefix", Effect::RunsCode),
            ("-C", Effect::RunsCode),
            ("-w", Effect::RunsCode),
            ("--workspace", Effect::RunsCode),
        ],
        operands: Operands::NotFiles,
        ..spec("npm", "sqdyDEhv", "Cw")
    },
    Spec {
        long: "always-make directory= debug? environment-overrides eval= file= makefile= ignore-errors \
include-dir= jobs? keep-going load-average? check-symlink-times just-print dry-run recon old-file= \
assume-old= output-sync? print-data-base question no-builtin-rules no-builtin-variables shuffle? \
silent quiet no-silent stop touch trace version print-directory no-print-directory what-if= \
new-file= assume-new= warn-undefined-variables help",
        effects: &[
            ("-C", Effect::RunsCode),
            ("--directory", Effect::RunsCode),
            ("-f", Effect::RunsCode),
            ("--file", Effect::RunsCode),
            ("--makefile", Effect::RunsCode),
            ("-I", Effect::ReadsTree),
            ("--include-dir", Effect::ReadsTree),
            ("--eval", Effect::Acts),
        ],
        operands: Operands::MakeTargets,
        attached_value: "jlO",
        ..spec("make", "BbdeEhiknpqrRsStvwL", "CfIoW")
    },
    // `xxd [options] [INFILE [OUTFILE]]`: a second operand is written (also with `-r`).
    Spec { operands: Operands::SecondWritten, ..spec("xxd", "abCEehipruvd", "cglnosR") },
];
