//! Shell command analysis: parses a script with tree-sitter-bash and lists every command, redirection and
//! construct a policy must see, so that rules never match raw strings.

mod assignments;
mod bash_variables;
mod braces;
mod constructs;
mod declarations;
mod file_operands;
mod getopt;
mod heredocs;
mod interpreters;
mod kinds;
mod known_literals;
mod literal_variables;
mod options;
mod program_specs;
mod program_specs_files;
mod program_table;
mod programs;
mod sed;
mod spec;
mod variables;
mod words;
mod working_folders;
mod wrapper_specs;
mod wrappers;
mod writing_programs;

use assignments::assignment;
use declarations::declaration_exports;
use kinds::KindName;
use kinds::node_text;
use serde::{Deserialize, Serialize};
use tree_sitter::{Node, Parser};
use variables::Reach;
use words::{Word, is_pattern, resolve};

pub use program_table::{OptionRow, OptionValue, ProgramRow, program_table};
pub use variables::with_whole_environment;

/// Scripts longer than this are not parsed: the analysis holds only an [`OpaqueKind::TooLarge`].
pub const MAX_SCRIPT_BYTES: usize = 64 * 1024;
/// Syntax nodes visited over the whole analysis (nested `bash -c` strings included).
pub const MAX_NODES: usize = 200_000;
/// Nesting depth of the syntax tree walked; deeper parts are reported as [`OpaqueKind::TooDeep`].
pub const MAX_TREE_DEPTH: usize = 256;
/// How many `bash -c '...'` strings inside each other are parsed; the next one is [`OpaqueKind::ShellTooDeep`].
pub const MAX_SHELL_DEPTH: usize = 8;

/// Everything a policy needs to know about a shell script.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShellAnalysis {
    /// Every simple command that may run, wherever it sits (lists, bodies, substitutions, wrappers).
    pub commands: Vec<SimpleCommand>,
    /// File redirections (`>`, `>>`, `>|`, `&>`, `&>>`, `<`, `<>`, `>&file`) and files programs write:
    /// `tee`/`find -fprint` targets, `sed -i` files, `script` logs, `flock` lock files, `parallel --joblog`.
    pub redirections: Vec<Redirection>,
    /// What cannot be known statically; a policy must never auto-allow a script with any of these.
    pub opaque: Vec<Opaque>,
    /// The parser found syntax errors (ERROR or MISSING nodes): the analysis may be incomplete.
    pub parse_errors: bool,
    /// Bash expands something at run time somewhere in the script (a parameter, arithmetic, a
    /// substitution): a script with no command to run is harmless only without any.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub expands: bool,
}

impl ShellAnalysis {
    /// True when nothing is opaque, nothing is dynamic and the script parsed cleanly.
    pub fn is_fully_static(&self) -> bool {
        !self.parse_errors
            && self.opaque.is_empty()
            && self.commands.iter().all(|c| !c.dynamic)
            && self.redirections.iter().all(|r| !r.dynamic)
    }
}

/// One command with its words resolved as bash would resolve them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SimpleCommand {
    /// The words after quote removal; unresolvable parts keep their source text (`$x`).
    pub argv: Vec<String>,
    /// The basename of `argv[0]` (`/bin/rm` and `./rm` are `rm`).
    pub program: String,
    /// `VAR=value` assignments for this command (prefixes, and those given to `env`/`sudo`).
    pub env: Vec<(String, String)>,
    /// The wrappers this command was found inside, outermost first (`sudo`, `bash`, `xargs`, `find`...).
    pub wrappers: Vec<String>,
    /// Some word holds an expansion or substitution, or (for `xargs`) arguments are appended at run time.
    pub dynamic: bool,
    /// The files the program's operands and options name, as its table in `shell/program_specs.rs`
    /// knows them (`cat F` reads F, `cp A B` reads A and writes B, `grep -r x D` reads the tree D).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<FileOperand>,
    /// The words bash expands as patterns before the program runs (`*.txt`, `~/.ssh/*`; not `'*.txt'`):
    /// bash lists the folders they name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patterns: Vec<String>,
    /// The folder a wrapper runs the command in (`env -C DIR cmd`, `nsenter --wd=DIR`), as written:
    /// its relative operands are judged from there too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_folder: Option<String>,
}

/// A file a program opens because an operand or an option names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileOperand {
    /// The word as bash passes it (tilde, globs and braces not yet expanded; see `dynamic`).
    pub path: String,
    pub role: FileRole,
    /// The whole tree below the path is read or written (`grep -r`, `rg`, `cp -r`, `rm -r`, `tar -c`).
    pub recursive: bool,
    /// The word holds an expansion or substitution: the path is only known at run time.
    pub dynamic: bool,
    /// A recursive walk that follows the symbolic links below the tree (`grep -R`, `rg -L`, `zip -r`):
    /// what the links point to is read (or written) too.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub follows_links: bool,
    /// How the program reaches it: `cat operand`, `sort -o`, `cp destination`...
    pub via: String,
}

/// What a program does with a file it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileRole {
    Read,
    /// Created, changed, moved away or deleted.
    Write,
    /// Code there runs (`make -C DIR`, `make -f FILE`, `cargo --manifest-path`, `npm --prefix`).
    RunsCode,
}

/// A file a command reads from or writes to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Redirection {
    /// The explicit file descriptor (`2` in `2>x`), if any.
    pub fd: Option<String>,
    /// The operator (`>`, `>>`, `>|`, `&>`, `&>>`, `>&`, `<`, `<>`) or the program writing the file: `tee`,
    /// `tee -a`, `find -fprint`, `sed -i`, `script`, `flock`, `parallel --joblog`, `parallel --results`.
    pub op: String,
    /// The target, resolved like a word.
    pub target: String,
    /// The target holds an expansion or substitution.
    pub dynamic: bool,
    /// The file is written (everything except `<`).
    pub write: bool,
}

/// Something the analyzer cannot see through.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Opaque {
    /// What it is.
    pub kind: OpaqueKind,
    /// The source text of the command or construct (for explanations).
    pub text: String,
}

/// The kinds of constructs whose effect is only known at run time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpaqueKind {
    /// `eval ...`.
    Eval,
    /// `source FILE` or `. FILE`.
    Source,
    /// The command name comes from a variable or substitution (`$CMD`, `$(echo rm)`).
    DynamicCommandName,
    /// An interpreter given code inline (`python -c`, `node -e`, `perl -e`, `ruby -e`, `php -r`...).
    InterpreterCode,
    /// An awk program that runs commands (`system(`, `|`) or is read from a file.
    AwkCode,
    /// A sed script that runs commands or writes files (`e`, `w`), is read from a file, or is unreadable.
    SedCode,
    /// `bash -c "$x"`: the code string is not static, or the shell is not bash-compatible (`fish -c`).
    ShellCode,
    /// `bash -c` nested deeper than [`MAX_SHELL_DEPTH`].
    ShellTooDeep,
    /// A shell or interpreter reading its code from stdin (`curl x | sh`, `bash <<EOF`, `sh < f`).
    StdinCode,
    /// A function definition (its body is analyzed, but calls to it run under another name).
    FunctionDefinition,
    /// `alias name=value`.
    AliasDefinition,
    /// `trap 'code' SIGNAL`.
    Trap,
    /// A redirection to `/dev/tcp/...` or `/dev/udp/...`.
    NetworkRedirection,
    /// `git -c` / `--config-env` / `--exec-path` with a setting that runs programs (`core.sshCommand`, `alias.*`...).
    GitConfigCode,
    /// An assignment to a variable that makes later programs run other code (`LD_PRELOAD`, `PATH`, `BASH_ENV`...).
    CodeInjectingVariable,
    /// `env -S STRING`: the command is split from a string at run time.
    EnvSplitString,
    /// The command runs on another machine or in another container (`ssh host CMD`, `echo CMD | ssh host`,
    /// `systemd-run -H host`, `parallel -S host`): it is not judged as a local program.
    RemoteCommand,
    /// A wrapper (`watch`, `su`, `flock`, `parallel`...) given an option the analyzer does not know (the
    /// command it runs is guessed by taking the option as a flag), given operands it refuses, or an option
    /// that runs or loads other code (`ssh -o ProxyCommand=...`, `systemd-run -p ExecStartPre=...`).
    WrapperOption,
    /// `portcullis api …`, `portcullis operator …` or `portcullis setup …` (which writes the agents' own
    /// settings): acts as the hub's operator or the local user with the credential or files the program
    /// reads itself (an agent never gets the operator's powers unseen: the operator is asked, and the
    /// sandbox hides the credential from the command).
    OperatorCommand,
    /// A program policies allow as read-only given an option that writes, runs a program or changes the
    /// system (`sort --compress-program`, `rg --pre`, `date -s`, `git branch -D`), or an option its table
    /// does not know (`shell/options.rs`).
    ProgramOption,
    /// The script exceeds [`MAX_SCRIPT_BYTES`].
    TooLarge,
    /// The analysis exceeded [`MAX_NODES`].
    TooComplex,
    /// The syntax tree nests deeper than [`MAX_TREE_DEPTH`].
    TooDeep,
    /// The bash grammar could not be loaded.
    ParserUnavailable,
    /// An assignment (prefix, `export`, `env X=v`, `read X`, `for X in`...) to a variable that is not on
    /// the reviewed list of inert ones (`shell/variables.rs`): what programs load or write may change.
    UnreviewedVariable,
    /// A substitution in text the grammar left whole (a heredoc body, a `${…}` operand) that could not be
    /// rescanned: a `$(` or `$[` there, or a backquote without its closing one.
    UnseenSubstitution,
    /// Bash evaluates a value as code: arithmetic on variables (`((x))`, `$((x))`, `[[ x -eq 1 ]]`,
    /// subscripts, `${x:n}`), `${!x}`, `${x@P}`, `declare -i`/`-n`, `[[ -v a[x] ]]`.
    EvaluatedValue,
    /// A syntax node kind no row of `shell/constructs.rs` reviews.
    UnknownConstruct,
    /// A shell option that changes how later words or assignments work (`set -a`, `set -k`).
    ShellOption,
    /// A later command name runs other code: `hash -p FILE NAME`, `enable -f LIB NAME`, `coproc`.
    CommandLookup,
}

/// Analyzes a bash script. Never fails: what cannot be analyzed is reported in `opaque` or `parse_errors`.
pub fn analyze(script: &str) -> ShellAnalysis {
    let mut analyzer = Analyzer::default();
    analyzer.analyze_script(script, &Context::default());
    analyzer.out
}

thread_local! {
    /// One parser per thread, made once (a `bash -c` string parsed while its script's tree is walked
    /// finds it free again: the parser is only held during a parse).
    static PARSER: std::cell::RefCell<Option<Parser>> = const { std::cell::RefCell::new(None) };
}

/// Parses `script` as bash with this thread's parser (made on first use; reset before each parse, so
/// nothing of an earlier script carries over); `None` when the grammar cannot be loaded.
fn parse_bash(script: &str) -> Option<tree_sitter::Tree> {
    let fresh = || {
        let mut parser = Parser::new();
        parser.set_language(&tree_sitter_bash::LANGUAGE.into()).ok().map(|()| parser)
    };
    PARSER.with(|cell| match cell.try_borrow_mut() {
        Ok(mut slot) => {
            if slot.is_none() {
                *slot = fresh();
            }
            let parser = slot.as_mut()?;
            parser.reset();
            parser.parse(script, None)
        }
        // Held further up this thread's stack (never expected): a parser of its own.
        Err(_) => fresh()?.parse(script, None),
    })
}

/// Where a node sits: inside which wrappers, how many `bash -c` deep, whether stdin carries data.
#[derive(Debug, Clone, Default)]
pub(crate) struct Context {
    pub(crate) wrappers: Vec<String>,
    pub(crate) shell_depth: usize,
    /// Stdin comes from a pipe, a heredoc, a here-string or a file, so a shell there would run it as code.
    pub(crate) stdin_redirected: bool,
    /// A wrapper set the folder the commands inside it run in (`env -C DIR`).
    pub(crate) chdir: Option<String>,
}

impl Context {
    pub(crate) fn inside(&self, wrapper: &str) -> Self {
        let mut wrappers = self.wrappers.clone();
        wrappers.push(wrapper.to_owned());
        Self { wrappers, ..self.clone() }
    }

    fn with_stdin_redirected(&self) -> Self {
        Self { stdin_redirected: true, ..self.clone() }
    }
}

#[derive(Debug, Default)]
pub(crate) struct Analyzer {
    pub(crate) out: ShellAnalysis,
    numeric: constructs::Numeric,
    nodes_seen: usize,
    budget_exhausted: bool,
}

impl Analyzer {
    /// Parses `script` and walks it; used for the top level and for each `bash -c` string.
    pub(crate) fn analyze_script(&mut self, script: &str, ctx: &Context) {
        if script.len() > MAX_SCRIPT_BYTES {
            let text = format!("script of {} bytes (limit {MAX_SCRIPT_BYTES})", script.len());
            self.opaque(OpaqueKind::TooLarge, text);
            return;
        }
        let tree = parse_bash(script);
        let Some(tree) = tree else {
            self.opaque(OpaqueKind::ParserUnavailable, script.to_owned());
            self.out.parse_errors = true;
            return;
        };
        let root = tree.root_node();
        if root.has_error() && has_real_syntax_errors(root, script) {
            self.out.parse_errors = true;
        }
        // The grammar takes a backslash-newline for a blank; bash removes it, joining the words around it
        // (`r\<newline>m` is `rm`). Where it joins two words the grammar splits, the parse is not bash's.
        if joins_words(script, &heredocs::quoted_body_ranges(root, script)) {
            self.out.parse_errors = true;
        }
        let outer = std::mem::replace(&mut self.numeric, constructs::Numeric::of_script(root, script));
        let _known = known_literals::install(literal_variables::of_script(root, script));
        self.visit(root, script, ctx, 0);
        self.numeric = outer;
    }

    pub(crate) fn opaque(&mut self, kind: OpaqueKind, text: impl Into<String>) {
        self.out.opaque.push(Opaque { kind, text: text.into() });
    }

    fn visit(&mut self, node: Node<'_>, src: &str, ctx: &Context, depth: usize) {
        if self.budget_exhausted {
            return;
        }
        self.nodes_seen += 1;
        if self.nodes_seen > MAX_NODES {
            self.budget_exhausted = true;
            self.opaque(OpaqueKind::TooComplex, format!("more than {MAX_NODES} syntax nodes"));
            return;
        }
        if depth > MAX_TREE_DEPTH {
            self.opaque(OpaqueKind::TooDeep, node_text(node, src).to_owned());
            return;
        }
        self.judge_construct(node, src, ctx);
        match node.kind_name() {
            "command" => self.command(node, src, ctx, depth, Vec::new()),
            "declaration_command" | "unset_command" => self.declaration(node, src, ctx, depth),
            "variable_assignment" => {
                self.check_assignment(node, src);
                self.visit_children(node, src, ctx, depth);
            }
            "for_statement" => {
                if let Some(variable) = node.child_by_field_name("variable") {
                    let text = node_text(node, src).lines().next().unwrap_or("");
                    self.check_variable(node_text(variable, src), None, Reach::Shell, text);
                    let mut cursor = node.walk();
                    let values: Vec<&str> = node
                        .children_by_field_name("value", &mut cursor)
                        .map(|v| node_text(v, src))
                        .collect();
                    if values.iter().all(|v| v.parse::<i64>().is_ok()) {
                        self.note_numeric_assignment(node_text(variable, src), "0");
                    }
                }
                self.visit_children(node, src, ctx, depth);
            }
            "function_definition" => {
                self.opaque(OpaqueKind::FunctionDefinition, node_text(node, src));
                self.visit_children(node, src, ctx, depth);
            }
            "redirected_statement" => {
                let inner =
                    if redirects_stdin(node, src) { ctx.with_stdin_redirected() } else { ctx.clone() };
                // `cmd >target more words`: the target is one word; the words after it are arguments
                // of the command (bash runs `cmd more words` with its output in `target`).
                let extra = redirect_arguments(node, src);
                let body = node.child_by_field_name("body");
                if !extra.is_empty() && body.is_none_or(|b| b.kind_name() != "command") {
                    // bash refuses words after a redirection of a compound command.
                    self.out.parse_errors = true;
                }
                let mut cursor = node.walk();
                for child in node.named_children(&mut cursor) {
                    if Some(child) == body && child.kind_name() == "command" {
                        self.command(child, src, &inner, depth + 1, extra.clone());
                    } else {
                        self.visit(child, src, &inner, depth + 1);
                    }
                }
            }
            "pipeline" => {
                let mut cursor = node.walk();
                for (index, child) in node.named_children(&mut cursor).enumerate() {
                    let child_ctx = if index > 0 { ctx.with_stdin_redirected() } else { ctx.clone() };
                    self.visit(child, src, &child_ctx, depth + 1);
                }
            }
            "file_redirect" => {
                self.file_redirect(node, src);
                self.visit_children(node, src, ctx, depth);
            }
            // Bash reads a backquote substitution's code only after removing one level of backslashes
            // (`\``, `\$`, `\\`): an escaped backquote inside starts a nested substitution, which the
            // grammar takes for a literal. The code is analysed as bash reads it.
            "command_substitution" if node.child(0).is_some_and(|c| c.kind_name() == "`") => {
                self.backquoted(node, src, ctx);
            }
            _ => self.visit_children(node, src, ctx, depth),
        }
    }

    fn visit_children(&mut self, node: Node<'_>, src: &str, ctx: &Context, depth: usize) {
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            self.visit(child, src, ctx, depth + 1);
        }
    }

    fn command(&mut self, node: Node<'_>, src: &str, ctx: &Context, depth: usize, extra: Vec<Word>) {
        let mut argv = Vec::new();
        let mut patterns = Vec::new();
        let mut env = Vec::new();
        let mut env_dynamic = false;
        let mut cursor = node.walk();
        for (index, child) in node.children(&mut cursor).enumerate() {
            let field = node.field_name_for_child(index as u32);
            match (field, child.kind_name()) {
                (Some("name" | "argument"), _) => match braces::expand(child, src) {
                    // Bash expands braces before the program sees its words (`{rm,-rf,d}`).
                    Some(words) => {
                        for expanded in words {
                            if !expanded.word.dynamic && expanded.pattern {
                                patterns.push(expanded.word.text.clone());
                            }
                            argv.push(expanded.word);
                        }
                    }
                    None => {
                        let word = resolve(child, src);
                        if field == Some("argument") && !word.dynamic && is_pattern(child, src) {
                            patterns.push(word.text.clone());
                        }
                        argv.push(word);
                    }
                },
                (None, "variable_assignment") => {
                    let (name, value) = assignment(child, src);
                    env_dynamic |= value.dynamic;
                    env.push((name, value.text));
                }
                _ => {}
            }
        }
        argv.extend(extra);
        let command_ctx = if redirects_stdin(node, src) { ctx.with_stdin_redirected() } else { ctx.clone() };
        // Prefix assignments are checked by `check_assignment` when the children are visited.
        let index = self.out.commands.len();
        self.emit(argv, env, env_dynamic, &command_ctx, node_text(node, src));
        if let Some(command) = self.out.commands.get_mut(index) {
            command.patterns = patterns;
        }
        self.visit_children(node, src, ctx, depth);
    }

    /// `export`/`declare`/`local`/`readonly`/`typeset`/`unset` are reported as commands too.
    fn declaration(&mut self, node: Node<'_>, src: &str, ctx: &Context, depth: usize) {
        let mut argv = Vec::new();
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            if !child.is_named() {
                if argv.is_empty() {
                    argv.push(Word::literal(node_text(child, src)));
                }
                continue;
            }
            if child.kind_name() == "variable_name" {
                // `export NAME`, `declare -x NAME`: the shell's value now reaches programs.
                let reach = if declaration_exports(node, src) { Reach::Exported } else { Reach::Shell };
                self.check_variable(node_text(child, src), None, reach, node_text(node, src));
            }
            if child.kind_name() == "variable_assignment" {
                let (name, value) = assignment(child, src);
                argv.push(Word { text: format!("{name}={}", value.text), dynamic: value.dynamic });
            } else if child.kind_name() == "variable_name" {
                argv.push(resolve(child, src));
            } else {
                // A word bash reads as a name or `NAME=value` once expanded (`export "PATH=/x"`,
                // `export {PATH=/x,y}`, `unset 'a[$(cmd)]'`), or as an option (`declare {-n,r=x}`).
                let words = braces::expand(child, src)
                    .map(|words| words.into_iter().map(|e| e.word).collect())
                    .unwrap_or_else(|| vec![resolve(child, src)]);
                for word in words {
                    self.declared_word(node, src, &word, child.kind_name() != "word");
                    argv.push(word);
                }
            }
        }
        self.emit(argv, Vec::new(), false, ctx, node_text(node, src));
        self.visit_children(node, src, ctx, depth);
    }

    /// Records one command and, for wrappers and special programs, what it runs or hides.
    pub(crate) fn emit(
        &mut self,
        argv: Vec<Word>,
        env: Vec<(String, String)>,
        extra_dynamic: bool,
        ctx: &Context,
        text: &str,
    ) {
        let Some(first) = argv.first() else { return };
        // A pattern in the name (`/bin/r?`) is expanded by bash to whatever file matches.
        let name_is_pattern = first.text != "[" && first.text.contains(['*', '?', '[']);
        if first.dynamic || name_is_pattern {
            self.opaque(OpaqueKind::DynamicCommandName, text);
        }
        let program = basename(&first.text).to_owned();
        let dynamic = extra_dynamic || argv.iter().any(|w| w.dynamic);
        let name_dynamic = first.dynamic;
        let index = self.out.commands.len();
        self.out.commands.push(SimpleCommand {
            argv: argv.iter().map(|w| w.text.clone()).collect(),
            program: program.clone(),
            env: env.clone(),
            wrappers: ctx.wrappers.clone(),
            dynamic,
            files: Vec::new(),
            patterns: Vec::new(),
            working_folder: ctx.chdir.clone(),
        });
        if !name_dynamic {
            programs::inspect(self, index, &program, &argv, &env, ctx, text);
        }
    }

    /// Records a file the command at `index` names through an operand or an option.
    pub(crate) fn add_file(&mut self, index: usize, word: &Word, role: FileRole, recursive: bool, via: &str) {
        if let Some(command) = self.out.commands.get_mut(index) {
            command.files.push(FileOperand {
                path: word.text.clone(),
                role,
                recursive,
                dynamic: word.dynamic,
                follows_links: false,
                via: via.to_owned(),
            });
        }
    }

    fn file_redirect(&mut self, node: Node<'_>, src: &str) {
        let mut fd = None;
        let mut op = String::new();
        let mut target: Option<Word> = None;
        let mut last_end = 0;
        let mut cursor = node.walk();
        for (index, child) in node.children(&mut cursor).enumerate() {
            match node.field_name_for_child(index as u32) {
                Some("descriptor") => fd = Some(node_text(child, src).to_owned()),
                Some("destination") => {
                    // `repeat1(_literal)`: adjacent literals form one word; a literal after a blank is
                    // an argument of the command (see `redirect_arguments`), not part of the target.
                    if target.is_some() && child.start_byte() > last_end {
                        break;
                    }
                    let word = resolve(child, src);
                    last_end = child.end_byte();
                    target = Some(match target.take() {
                        Some(mut previous) => {
                            previous.text.push_str(&word.text);
                            previous.dynamic |= word.dynamic;
                            previous
                        }
                        None => word,
                    });
                }
                _ if !child.is_named() => op.push_str(child.kind_name()),
                // The grammar has no `<>`: it parses `<` then an ERROR holding `>`.
                _ if child.is_error() && node_text(child, src) == ">" => op.push('>'),
                _ => {}
            }
        }
        // Without a descriptor the `<` of `<>` becomes an ERROR just before a `>` redirection.
        if op == ">" && fd.is_none() && node.prev_sibling().is_some_and(|p| is_stray_less(p, node, src)) {
            op = "<>".to_owned();
        }
        let Some(target) = target else { return };
        let is_fd_duplicate = matches!(op.as_str(), ">&" | "<&")
            && (target.text == "-" || target.text.chars().all(|c| c.is_ascii_digit()));
        if is_fd_duplicate || op.ends_with('-') {
            return;
        }
        self.add_redirection(fd, op, target, node_text(node, src));
    }

    pub(crate) fn add_redirection(&mut self, fd: Option<String>, op: String, target: Word, text: &str) {
        if target.text.starts_with("/dev/tcp/") || target.text.starts_with("/dev/udp/") {
            self.opaque(OpaqueKind::NetworkRedirection, text);
        }
        let write = op != "<" && op != "<&";
        self.out.redirections.push(Redirection {
            fd,
            op,
            target: target.text,
            dynamic: target.dynamic,
            write,
        });
    }
}

/// The words a redirection's grammar node swallowed after its target (`>x a b`: `a`, `b`): bash passes
/// them to the command as arguments.
fn redirect_arguments(node: Node<'_>, src: &str) -> Vec<Word> {
    let mut words = Vec::new();
    let mut cursor = node.walk();
    let redirects: Vec<Node<'_>> = node.children_by_field_name("redirect", &mut cursor).collect();
    for redirect in redirects.into_iter().filter(|r| r.kind_name() == "file_redirect") {
        let mut inner = redirect.walk();
        let destinations: Vec<Node<'_>> =
            redirect.children_by_field_name("destination", &mut inner).collect();
        let mut last_end = None::<usize>;
        let mut in_target = true;
        for destination in destinations {
            if let Some(end) = last_end
                && destination.start_byte() > end
            {
                in_target = false;
            }
            last_end = Some(destination.end_byte());
            if in_target {
                continue;
            }
            let word = resolve(destination, src);
            match words.last_mut() {
                // Adjacent literals after the target form one argument too.
                Some(previous) if previous_end_is(destination, src) => {
                    let previous: &mut Word = previous;
                    previous.text.push_str(&word.text);
                    previous.dynamic |= word.dynamic;
                }
                _ => words.push(word),
            }
        }
    }
    words
}

/// True when the byte before `node` is not a blank (it continues the previous literal).
fn previous_end_is(node: Node<'_>, src: &str) -> bool {
    node.start_byte() > 0
        && src.as_bytes().get(node.start_byte() - 1).is_some_and(|b| !b.is_ascii_whitespace())
}

/// True when one of the node's own redirections feeds stdin (`<`, `<>`, heredoc, here-string).
fn redirects_stdin(node: Node<'_>, src: &str) -> bool {
    let mut cursor = node.walk();
    let redirects: Vec<Node<'_>> = node.children_by_field_name("redirect", &mut cursor).collect();
    redirects.into_iter().any(|r| match r.kind_name() {
        "heredoc_redirect" | "herestring_redirect" => true,
        "file_redirect" => {
            let fd = r.child_by_field_name("descriptor").map(|d| node_text(d, src));
            let mut inner = r.walk();
            let reads = r.children(&mut inner).any(|c| !c.is_named() && c.kind_name() == "<");
            reads && matches!(fd, None | Some("0"))
        }
        _ => false,
    })
}

/// A backslash-newline with no blank on either side: bash joins the words the grammar splits there
/// (but not in a quoted heredoc's body, `literal`, which bash reads as it stands).
fn joins_words(script: &str, literal: &[std::ops::Range<usize>]) -> bool {
    let bytes = script.as_bytes();
    bytes.windows(4).enumerate().any(|(at, w)| {
        matches!(w, [before, b'\\', b'\n', after] if !before.is_ascii_whitespace() && *before != b'\\' && !after.is_ascii_whitespace())
            && !literal.iter().any(|r| r.contains(&(at + 1)))
    })
}

/// The program a command word names: `/bin/rm` and `./rm` are `rm`.
pub fn basename_of(word: &str) -> &str {
    basename(word)
}

/// The last path component: `/bin/rm` and `./rm` are `rm`.
pub(crate) fn basename(word: &str) -> &str {
    let trimmed = word.trim_end_matches('/');
    trimmed.rsplit('/').next().filter(|s| !s.is_empty()).unwrap_or(word)
}

/// The grammar has no `<>`: `cat <>f` parses as an ERROR holding `<` right before the redirection `>f`.
fn is_stray_less(error: Node<'_>, redirect: Node<'_>, src: &str) -> bool {
    error.is_error()
        && node_text(error, src) == "<"
        && error.end_byte() == redirect.start_byte()
        && redirect.kind_name() == "file_redirect"
        && redirect.child(0).is_some_and(|c| c.kind_name() == ">")
}

/// True when the tree has ERROR or MISSING nodes other than the `>` of a `<>` redirection.
fn has_real_syntax_errors(root: Node<'_>, src: &str) -> bool {
    let mut cursor = root.walk();
    loop {
        let node = cursor.node();
        if node.is_missing() {
            return true;
        }
        if node.is_error() {
            let after_less = node.prev_sibling().is_some_and(|p| p.kind_name() == "<");
            let in_redirect = node.parent().is_some_and(|p| p.kind_name() == "file_redirect");
            let inside_redirect = after_less && in_redirect && node_text(node, src) == ">";
            let before_redirect = node.next_sibling().is_some_and(|next| is_stray_less(node, next, src));
            if !(inside_redirect || before_redirect) {
                return true;
            }
        }
        if node.has_error() && cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basename_strips_directories() {
        assert_eq!(basename("/bin/rm"), "rm");
        assert_eq!(basename("./rm"), "rm");
        assert_eq!(basename("rm"), "rm");
        assert_eq!(basename("/"), "/");
    }

    #[test]
    fn less_greater_redirection_is_not_a_syntax_error() {
        let analysis = analyze("cat <>f");
        assert!(!analysis.parse_errors);
        assert_eq!(analysis.redirections[0].op, "<>");
        assert!(analysis.redirections[0].write);
    }
}
