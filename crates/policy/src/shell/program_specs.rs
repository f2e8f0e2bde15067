//! The knowledge of programs as data: for each program policies commonly allow or prompt, its options
//! (GNU getopt style) and what its operands and option values are — files read, files written, code run
//! — so that `cat ~/.ssh/id_rsa` is judged as a read of that file and `sort -o /etc/x` as a write there.
//! One row per program; `shell/options.rs` parses a command against its row, `shell/file_operands.rs`
//! turns the operands into files. Rows of file utilities, archives and build tools are in
//! `shell/program_specs_files.rs`; what a row says is `shell/spec.rs`.

use super::program_specs_files;
use super::spec::{ALWAYS, Effect, Operands, Spec, spec};

/// The row for `program`: its own, or that of the program it is another name of.
pub(super) fn find(program: &str) -> Option<&'static Spec> {
    let name = match program {
        "egrep" | "fgrep" | "rgrep" => "grep",
        "gcp" => "cp",
        "gmv" => "mv",
        "md5sum" | "sha1sum" | "sha224sum" | "sha256sum" | "sha384sum" | "sha512sum" | "b2sum" => "sha256sum",
        other => other,
    };
    all().find(|s| s.program == name)
}

/// Every program's row (git subcommands apart: [`git`]).
pub(super) fn all() -> impl Iterator<Item = &'static Spec> {
    SPECS.iter().chain(program_specs_files::SPECS)
}

/// The row of a git subcommand policies allow or prompt; other subcommands are for rules to judge.
pub(super) fn git(sub: &str) -> Option<&'static Spec> {
    match sub {
        "diff" => Some(&GIT_DIFF),
        "log" | "show" | "whatchanged" => Some(&GIT_DIFF_LOG),
        "status" => Some(&GIT_STATUS),
        "blame" | "annotate" => Some(&GIT_BLAME),
        "branch" => Some(&GIT_BRANCH),
        _ => None,
    }
}

pub(super) const HELP: &str = "help version";

const SPECS: &[Spec] = &[
    Spec {
        long: "all almost-all author escape block-size= ignore-backups color? colour? classify? file-type \
format= full-time group-directories-first no-group human-readable si dereference-command-line \
dereference-command-line-symlink-to-dir hide= hyperlink? indicator-style= inode ignore= \
kibibytes literal numeric-uid-gid hide-control-chars show-control-chars quote-name \
quoting-style= reverse recursive size sort= time= time-style= tabsize= width= context zero \
directory dereference help version",
        recursive: &["-R", "--recursive"],
        follows_links: &["-L", "--dereference"],
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
        effects: &[("--files0-from", Effect::Reads)],
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
        effects: &[
            ("-C", Effect::Acts),
            ("--compile", Effect::Acts),
            ("-f", Effect::Reads),
            ("--files-from", Effect::Reads),
            ("-m", Effect::Reads),
            ("--magic-file", Effect::Reads),
            // Restoring the access time writes the file's times.
            ("-p", Effect::InPlace),
            ("--preserve-date", Effect::InPlace),
        ],
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
        effects: &[
            ("-X", Effect::Reads),
            ("--exclude-from", Effect::Reads),
            ("--from-file", Effect::Reads),
            ("--to-file", Effect::Reads),
        ],
        recursive: &["-r", "--recursive"],
        // GNU diff compares what links point to unless `--no-dereference`.
        follows_links: ALWAYS,
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
        effects: &[
            ("-e", Effect::PatternGiven),
            ("--regexp", Effect::PatternGiven),
            ("-f", Effect::PatternGiven),
            ("-f", Effect::Reads),
            ("--file", Effect::PatternGiven),
            ("--file", Effect::Reads),
            ("--exclude-from", Effect::Reads),
        ],
        operands: Operands::PatternThenRead,
        recursive: &["-r", "-R", "--recursive", "--dereference-recursive"],
        follows_links: &["-R", "--dereference-recursive"],
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
        effects: &[
            ("--pre", Effect::Acts),
            ("--hostname-bin", Effect::Acts),
            // Decompressors found through PATH run on every compressed file.
            ("-z", Effect::Acts),
            ("--search-zip", Effect::Acts),
            ("-e", Effect::PatternGiven),
            ("--regexp", Effect::PatternGiven),
            ("-f", Effect::PatternGiven),
            ("-f", Effect::Reads),
            ("--file", Effect::PatternGiven),
            ("--file", Effect::Reads),
            ("--files", Effect::PatternGiven),
            ("--type-list", Effect::PatternGiven),
            ("--ignore-file", Effect::Reads),
        ],
        operands: Operands::PatternThenRead,
        recursive: ALWAYS,
        follows_links: &["-L", "--follow"],
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
            ("--files0-from", Effect::Reads),
            ("--random-source", Effect::Reads),
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
        // `-R` runs tree again in every folder with `-o 00Tree.html` (with `-H`): a file written in each.
        effects: &[("-o", Effect::Writes), ("-R", Effect::Acts)],
        operands: Operands::ReadTree,
        follows_links: &["-l"],
        ..spec("tree", "adlfxRqNQpugshDFvtcUriASnCXJ", "LPIoHT")
    },
    Spec {
        long: "date= debug file= iso-8601? resolution rfc-email rfc-3339= reference= set= universal utc help \
version",
        effects: &[
            ("-s", Effect::Acts),
            ("--set", Effect::Acts),
            ("-f", Effect::Reads),
            ("--file", Effect::Reads),
            ("-r", Effect::Reads),
            ("--reference", Effect::Reads),
        ],
        operands: Operands::FormatOnly,
        attached_value: "I",
        ..spec("date", "Ru", "dfrs")
    },
    Spec {
        long: "all skip-alias skip-functions help version",
        operands: Operands::NotFiles,
        ..spec("which", "as", "")
    },
    Spec {
        long: "all kernel-name nodename kernel-release kernel-version machine processor hardware-platform \
operating-system help version",
        operands: Operands::NotFiles,
        ..spec("uname", "asnrvmpio", "")
    },
    Spec { long: HELP, operands: Operands::NotFiles, ..spec("whoami", "", "") },
    Spec { long: HELP, operands: Operands::NotFiles, ..spec("pwd", "LP", "") },
    Spec {
        long: "quit-at-eof QUIT-AT-EOF quit-if-one-screen ignore-case IGNORE-CASE LONG-PROMPT LINE-NUMBERS \
line-numbers RAW-CONTROL-CHARS raw-control-chars chop-long-lines no-init squeeze-blank-lines silent \
SILENT tabs= log-file= LOG-FILE= pattern= prompt= tag= tag-file= follow-name incsearch mouse \
no-histdups use-color wordwrap help version",
        effects: &[
            ("-o", Effect::Writes),
            ("-O", Effect::Writes),
            ("--log-file", Effect::Writes),
            ("--LOG-FILE", Effect::Writes),
            ("-k", Effect::Reads),
            ("-T", Effect::Reads),
            ("--tag-file", Effect::Reads),
        ],
        ..spec("less", "aABcCdeEfFgGiIJKLmMnNqQrRsSuUVwWXX~", "bhjkoOpPtTxyz#")
    },
    Spec {
        long: "silent logical no-pause print-over clean-print squeeze plain lines= help version",
        ..spec("more", "dlfpcsu", "n")
    },
    Spec {
        long: "bytes= characters= delimiter= fields= complement only-delimited output-delimiter= \
zero-terminated help version",
        ..spec("cut", "nsz", "bcdf")
    },
    Spec {
        long: "print-bytes ignore-initial= verbose bytes= quiet silent help version",
        ..spec("cmp", "blsz", "in")
    },
    Spec {
        long: "check-order nocheck-order output-delimiter= total zero-terminated help version",
        ..spec("comm", "123z", "")
    },
    Spec {
        long: "ackmate all-types all-text before= after= context= break no-break color no-color column count \
case-sensitive ignore-case smart-case literal fixed-strings files-with-matches files-without-matches \
filename no-filename follow group no-group hidden ignore= ignore-dir= skip-vcs-ignores unrestricted \
search-binary line-numbers no-numbers max-count= depth= one-device only-matching print-long-lines \
passthrough silent stats vimgrep word-regexp null print0 path-to-ignore= help version",
        effects: &[("-g", Effect::PatternGiven), ("-p", Effect::Reads), ("--path-to-ignore", Effect::Reads)],
        operands: Operands::PatternThenRead,
        recursive: ALWAYS,
        follows_links: &["-f", "--follow"],
        ..spec("ag", "acDfhHilLnoQrsStuUvVwz0", "ABCGgmp")
    },
    Spec {
        long: "null-input raw-input slurp compact-output raw-output raw-output0 join-output ascii-output \
sort-keys color-output monochrome-output tab indent= unbuffered stream stream-errors seq exit-status \
arg== argjson== slurpfile== rawfile== args jsonargs from-file= library-path= help version \
build-configuration",
        effects: &[
            ("-f", Effect::PatternGiven),
            ("-f", Effect::Reads),
            ("--from-file", Effect::PatternGiven),
            ("--from-file", Effect::Reads),
            ("--slurpfile", Effect::Reads),
            ("--rawfile", Effect::Reads),
            ("-L", Effect::ReadsTree),
            ("--library-path", Effect::ReadsTree),
            ("--args", Effect::OperandsNotFiles),
            ("--jsonargs", Effect::OperandsNotFiles),
        ],
        operands: Operands::ProgramThenRead,
        ..spec("jq", "nRscrjaSCMeh0V", "fL")
    },
    Spec {
        long: "yaml-output yaml-roundtrip yaml-output-grammar-version= width= indentless-lists explicit-start \
explicit-end in-place null-input raw-input slurp compact-output raw-output join-output ascii-output \
sort-keys color-output monochrome-output tab indent= seq exit-status arg== argjson== slurpfile== \
rawfile== args jsonargs from-file= help version",
        effects: &[
            ("-i", Effect::InPlace),
            ("--in-place", Effect::InPlace),
            ("-f", Effect::PatternGiven),
            ("-f", Effect::Reads),
            ("--from-file", Effect::PatternGiven),
            ("--from-file", Effect::Reads),
            ("--slurpfile", Effect::Reads),
            ("--rawfile", Effect::Reads),
            ("--args", Effect::OperandsNotFiles),
            ("--jsonargs", Effect::OperandsNotFiles),
        ],
        operands: Operands::ProgramThenRead,
        ..spec("yq", "yYinRscrjaSCMeh", "wf")
    },
    Spec {
        long: "binary check tag text zero ignore-missing quiet status strict warn help version",
        ..spec("sha256sum", "bctzw", "")
    },
    Spec {
        long: "body-numbering= section-delimiter= footer-numbering= header-numbering= line-increment= \
join-blank-lines= number-format= no-renumber number-separator= starting-line-number= number-width= help version",
        ..spec("nl", "p", "bdfhilnsvw")
    },
    Spec {
        long: "address-radix= endian= skip-bytes= read-bytes= strings? format= output-duplicates width? \
traditional help version",
        attached_value: "w",
        ..spec("od", "abcdfilosvx", "AjNSt")
    },
    Spec { long: "decode ignore-garbage wrap= help version", ..spec("base64", "di", "w") },
    Spec { long: "before regex separator= help version", ..spec("tac", "br", "s") },
    Spec { long: "bytes spaces width= help version", ..spec("fold", "bs", "w") },
    Spec { long: "delimiters= serial zero-terminated help version", ..spec("paste", "sz", "d") },
    Spec {
        digits: true,
        long: "crown-margin prefix= split-only tagged-paragraph uniform-spacing width= goal= help version",
        ..spec("fmt", "cstu", "pwg")
    },
    Spec { digits: true, long: "initial tabs= help version", ..spec("expand", "i", "t") },
    Spec { long: HELP, ..spec("rev", "hV", "") },
    Spec {
        long: "canonicalize-existing canonicalize-missing logical physical quiet relative-to= relative-base= \
strip no-symlinks zero help version",
        ..spec("realpath", "emLPqsz", "")
    },
    Spec {
        long: "canonicalize canonicalize-existing canonicalize-missing no-newline quiet silent verbose zero help \
version",
        ..spec("readlink", "femnqsvz", "")
    },
    Spec {
        long: "multiple suffix= zero help version",
        operands: Operands::NotFiles,
        ..spec("basename", "az", "s")
    },
    Spec { long: "zero help version", operands: Operands::NotFiles, ..spec("dirname", "z", "") },
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
show-stats name-rev ignore-cr-at-eol show-origin raw no-stat";

const GIT_DIFF_LOG: Spec = Spec {
    digits: true,
    long: GIT_DIFF_LOG_LONG,
    effects: &[
        ("--output", Effect::Writes),
        ("-O", Effect::Reads),
        ("--ext-diff", Effect::Acts),
        ("--textconv", Effect::Acts),
        ("--show-signature", Effect::Acts),
    ],
    attached_value: "UMCBX",
    operands: Operands::GitRevisions,
    ..spec("git", "pusRabwWDzEFPigcmtr", "nSGOlL")
};

const GIT_DIFF: Spec = Spec { operands: Operands::GitDiff, ..GIT_DIFF_LOG };

const GIT_STATUS: Spec = Spec {
    long: "short branch show-stash porcelain? long verbose untracked-files? ignore-submodules? ignored? \
column? no-column ahead-behind no-ahead-behind renames no-renames find-renames? null",
    attached_value: "u",
    operands: Operands::NotFiles,
    ..spec("git status", "sbvz", "")
};

const GIT_BLAME: Spec = Spec {
    long: "root show-stats score-debug show-name show-number show-email porcelain line-porcelain \
incremental encoding= contents= date= progress no-progress reverse= first-parent ignore-rev= \
ignore-revs-file= color-lines color-by-age minimal abbrev?",
    effects: &[("--contents", Effect::Reads), ("--ignore-revs-file", Effect::Reads), ("-S", Effect::Reads)],
    attached_value: "MC",
    operands: Operands::NotFiles,
    ..spec("git blame", "bcfhlnpstwe", "LS")
};

const GIT_BRANCH: Spec = Spec {
    long: "all remotes list verbose quiet color? no-color contains? no-contains? merged? no-merged? \
points-at= sort= format= column? no-column show-current ignore-case abbrev= no-abbrev omit-empty \
delete move copy force set-upstream-to= unset-upstream edit-description track? no-track \
create-reflog recurse-submodules",
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
