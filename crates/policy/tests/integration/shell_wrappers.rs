//! Behaviour of the shell analyzer on wrappers (env, sudo, timeout, xargs, find -exec, watch, su, flock,
//! ssh, ...): each must report the command it runs.

// Test helpers run only inside tests; panicking on a missing command is the assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::*;
use portcullis_policy::shell::{FileRole, OpaqueKind, analyze};

#[test]
fn prefix_assignments_are_env() {
    let a = clean("VAR=1 OTHER='two words' rm x");
    let rm = only(&a, "rm");
    assert_eq!(rm.env, vec![("VAR".into(), "1".into()), ("OTHER".into(), "two words".into())]);
    assert_eq!(rm.argv, vec!["rm", "x"]);
}

#[test]
fn env_wrapper() {
    let a = clean("env -i X=1 rm y");
    assert_eq!(programs(&a), vec!["env", "rm"]);
    let rm = &a.commands[1];
    assert_eq!(rm.argv, vec!["rm", "y"]);
    assert_eq!(rm.env, vec![("X".into(), "1".into())]);
    assert_eq!(rm.wrappers, vec!["env"]);
}

#[test]
fn env_split_string_is_opaque() {
    assert_eq!(kinds(&clean("env -S 'rm -rf /'")), vec![OpaqueKind::EnvSplitString]);
}

#[test]
fn sudo_with_options() {
    let a = clean("sudo -u root -E rm -rf /x");
    let rm = only(&a, "rm");
    assert_eq!(rm.argv, vec!["rm", "-rf", "/x"]);
    assert_eq!(rm.wrappers, vec!["sudo"]);
    assert_eq!(only(&a, "sudo").argv[0], "sudo");
}

#[test]
fn doas() {
    assert_eq!(only(&clean("doas -u root rm x"), "rm").wrappers, vec!["doas"]);
}

#[test]
fn timeout_duration_is_skipped() {
    let a = clean("timeout -s KILL 5 rm x");
    assert_eq!(only(&a, "rm").argv, vec!["rm", "x"]);
    assert_eq!(only(&clean("timeout 5 rm x"), "rm").wrappers, vec!["timeout"]);
}

#[test]
fn nice_adjustment_is_skipped() {
    assert_eq!(only(&clean("nice -n 5 rm x"), "rm").argv, vec!["rm", "x"]);
    assert_eq!(only(&clean("nice -5 rm x"), "rm").argv, vec!["rm", "x"]);
}

#[test]
fn nohup_in_background() {
    let a = clean("nohup rm x &");
    assert_eq!(argvs(&a), vec![vec!["nohup", "rm", "x"], vec!["rm", "x"]]);
}

#[test]
fn time_wrapper() {
    assert_eq!(only(&clean("time rm x"), "rm").wrappers, vec!["time"]);
}

#[test]
fn command_and_builtin() {
    assert_eq!(only(&clean("command rm x"), "rm").wrappers, vec!["command"]);
    assert_eq!(only(&clean("command -p rm x"), "rm").argv, vec!["rm", "x"]);
    assert!(clean("command -v rm").commands.iter().all(|c| c.program == "command"));
    assert_eq!(only(&clean("builtin echo hi"), "echo").argv, vec!["echo", "hi"]);
}

#[test]
fn exec_wrapper() {
    assert_eq!(only(&clean("exec rm x"), "rm").wrappers, vec!["exec"]);
}

#[test]
fn nested_wrappers_are_listed_outermost_first() {
    let a = clean("sudo env X=1 timeout 5 nice rm x");
    let rm = only(&a, "rm");
    assert_eq!(rm.wrappers, vec!["sudo", "env", "timeout", "nice"]);
    assert_eq!(rm.env, vec![("X".into(), "1".into())]);
}

#[test]
fn xargs_inner_command_is_dynamic() {
    let a = clean("find . -name '*.o' | xargs -0 -n 1 rm -f");
    let rm = only(&a, "rm");
    assert_eq!(rm.argv, vec!["rm", "-f"]);
    assert_eq!(rm.wrappers, vec!["xargs"]);
    assert!(rm.dynamic);
    assert_eq!(only(&clean("xargs rm"), "rm").argv, vec!["rm"]);
    assert_eq!(only(&clean("xargs -I{} cp {} /tmp"), "cp").argv, vec!["cp", "{}", "/tmp"]);
}

#[test]
fn find_exec() {
    let a = clean("find . -name x -exec rm {} \\; -execdir ls {} +");
    let rm = only(&a, "rm");
    // `{}` is a file found below the start, judged as the start (every path below it is where it is).
    assert_eq!(rm.argv, vec!["rm", "."]);
    assert_eq!(rm.wrappers, vec!["find"]);
    assert!(!rm.dynamic);
    assert_eq!(only(&a, "ls").argv, vec!["ls", "."]);
}

#[test]
fn find_delete_is_a_synthetic_find_delete_command() {
    let a = clean("find /tmp build -name '*.o' -delete");
    assert_eq!(
        argvs(&a),
        vec![
            vec!["find", "/tmp", "build", "-name", "*.o", "-delete"],
            vec!["find", "-delete", "/tmp", "build"]
        ]
    );
    assert_eq!(a.commands[1].wrappers, vec!["find"]);
    assert_eq!(argvs(&clean("find . -name x")), vec![vec!["find", ".", "-name", "x"]]);
}

#[test]
fn find_fprint_is_a_write() {
    let a = clean("find . -fprint out.txt");
    assert_eq!(a.redirections[0].target, "out.txt");
    assert!(a.redirections[0].write);
}

// More wrappers: each must report the command it runs, with exact option parsing; unknown options fail
// closed (`WrapperOption`), remote commands are `RemoteCommand` and never local commands.

#[test]
fn watch_runs_its_words_through_sh() {
    let a = clean("watch -n 1 rm x");
    let rm = only(&a, "rm");
    assert_eq!(rm.argv, vec!["rm", "x"]);
    assert_eq!(rm.wrappers, vec!["watch"]);
    assert!(a.opaque.is_empty());
    for script in
        ["watch -n1 rm x", "watch --interval=2 rm x", "watch --interval 2 -d rm x", "watch -dtb rm x"]
    {
        assert_eq!(only(&clean(script), "rm").argv, vec!["rm", "x"], "{script}");
    }
    // The words are joined and parsed by `sh -c`: a quoted list is two commands.
    let b = clean("watch 'ls; rm -rf ~'");
    assert_eq!(only(&b, "rm").argv, vec!["rm", "-rf", "~"]);
    assert_eq!(only(&b, "ls").wrappers, vec!["watch"]);
    // `-d` takes its argument only attached: `-d rm` is the flag then the command.
    assert_eq!(only(&clean("watch -d rm x"), "rm").argv, vec!["rm", "x"]);
    assert_eq!(only(&clean("watch -dpermanent rm x"), "rm").argv, vec!["rm", "x"]);
}

#[test]
fn watch_exec_does_not_use_a_shell() {
    let a = clean("watch -x rm -rf 'a b'");
    assert_eq!(only(&a, "rm").argv, vec!["rm", "-rf", "a b"]);
    assert_eq!(kinds(&clean("watch \"$CMD\"")), vec![OpaqueKind::ShellCode]);
}

#[test]
fn unknown_wrapper_options_fail_closed() {
    for script in [
        "watch --bogus rm x",
        // Ambiguous for getopt_long: `--c` may be `--color` or `--chgexit`.
        "watch --c rm x",
        "stdbuf -z rm x",
        "setsid --bogus rm x",
        "ionice -X rm x",
        "taskset -z 1 rm x",
        "chroot --bogus /srv rm x",
        "flock -Q l rm x",
        "su -Z -c 'rm x'",
        "script -Z -c 'rm x'",
        "nsenter --bogus rm x",
        "unshare -Z rm x",
        "systemd-run --bogus rm x",
        "parallel --bogus rm ::: a",
        "unbuffer -x rm",
        "busybox --bogus rm",
    ] {
        let a = analyze(script);
        assert!(kinds(&a).contains(&OpaqueKind::WrapperOption), "{script}: {:?}", a.opaque);
        assert!(!a.is_fully_static(), "{script}");
    }
    // A unique prefix is the whole option, as getopt_long reads it: `--int=1` is `--interval=1`.
    assert_eq!(only(&clean("watch --int=1 rm x"), "rm").argv, vec!["rm", "x"]);
    // The command is still reported, found by taking the option as a flag.
    assert_eq!(only(&clean("watch --bogus rm x"), "rm").argv, vec!["rm", "x"]);
    // An option missing its argument is refused too.
    assert_eq!(kinds(&clean("watch -n")), vec![OpaqueKind::WrapperOption]);
}

#[test]
fn su_c_is_shell_code() {
    for script in [
        "su -c 'rm x'",
        "su -c 'rm x' root",
        "su - root -c 'rm x'",
        "su root -c 'rm x'",
        "su -l root --command='rm x'",
        "su --command 'rm x' -s /bin/bash root",
        "su -mc 'rm x'",
        "su --session-command='rm x' root",
        "su - -c 'rm x' root",
        "su root -l -c 'rm x'",
        "su root -- -c 'rm x'",
    ] {
        let a = clean(script);
        let rm = only(&a, "rm");
        assert_eq!(rm.argv, vec!["rm", "x"], "{script}");
        assert_eq!(rm.wrappers, vec!["su"], "{script}");
        assert!(a.opaque.is_empty(), "{script}: {:?}", a.opaque);
    }
    assert!(clean("su - root").opaque.is_empty());
    assert_eq!(kinds(&clean("echo 'rm x' | su")), vec![OpaqueKind::StdinCode]);
    assert_eq!(kinds(&clean("su -s /usr/bin/python3 -c 'x' root")), vec![OpaqueKind::ShellCode]);
    assert_eq!(kinds(&clean("su root extra args")), vec![OpaqueKind::WrapperOption]);
    assert_eq!(kinds(&clean("su -c \"$X\"")), vec![OpaqueKind::ShellCode]);
}

#[test]
fn runuser_user_runs_the_command_directly() {
    let a = clean("runuser -u bob -- rm -rf x");
    let rm = only(&a, "rm");
    assert_eq!(rm.argv, vec!["rm", "-rf", "x"]);
    assert_eq!(rm.wrappers, vec!["runuser"]);
    assert_eq!(only(&clean("runuser -u bob rm x"), "rm").argv, vec!["rm", "x"]);
    assert_eq!(only(&clean("runuser --user=bob -g wheel rm x"), "rm").argv, vec!["rm", "x"]);
    assert_eq!(only(&clean("runuser - bob -c 'rm x'"), "rm").wrappers, vec!["runuser"]);
    assert_eq!(kinds(&clean("runuser -u bob -c 'rm x'")), vec![OpaqueKind::WrapperOption]);
}

#[test]
fn sg_command_is_shell_code() {
    let a = clean("sg wheel -c 'rm x; ls'");
    assert_eq!(only(&a, "rm").wrappers, vec!["sg"]);
    assert_eq!(programs(&a), vec!["sg", "rm", "ls"]);
    assert_eq!(only(&clean("sg - docker 'rm x'"), "rm").argv, vec!["rm", "x"]);
    assert_eq!(kinds(&clean("echo 'rm x' | sg wheel")), vec![OpaqueKind::StdinCode]);
    let b = clean("sg wheel rm x");
    assert_eq!(kinds(&b), vec![OpaqueKind::WrapperOption]);
    assert_eq!(only(&b, "rm").argv, vec!["rm", "x"]);
}

#[test]
fn script_command_and_log_files() {
    let a = clean("script -qc 'rm x' out.log");
    let rm = only(&a, "rm");
    assert_eq!(rm.argv, vec!["rm", "x"]);
    assert_eq!(rm.wrappers, vec!["script"]);
    assert_eq!(redirs(&a), vec![("script", "out.log", true)]);
    // getopt permutes: options may follow the file.
    let b = clean("script out.log -q -c 'rm y'");
    assert_eq!(only(&b, "rm").argv, vec!["rm", "y"]);
    assert_eq!(redirs(&b), vec![("script", "out.log", true)]);
    assert_eq!(redirs(&clean("script -c ls")), vec![("script", "typescript", true)]);
    assert_eq!(
        redirs(&clean("script -c ls -O o.log -T t.log")),
        vec![("script", "o.log", true), ("script", "t.log", true)]
    );
    assert_eq!(kinds(&clean("echo 'rm x' | script -q /dev/null")), vec![OpaqueKind::StdinCode]);
    assert!(analyze("script --command='rm x' f").commands.iter().any(|c| c.program == "rm"));
}

#[test]
fn flock_command_forms() {
    let a = clean("flock -n -w 5 build.lock rm -rf target");
    let rm = only(&a, "rm");
    assert_eq!(rm.argv, vec!["rm", "-rf", "target"]);
    assert_eq!(rm.wrappers, vec!["flock"]);
    assert_eq!(redirs(&a), vec![("flock", "build.lock", true)]);
    let b = clean("flock build.lock -c 'rm x && ls'");
    assert_eq!(programs(&b), vec!["flock", "rm", "ls"]);
    assert_eq!(only(&b, "rm").wrappers, vec!["flock"]);
    assert_eq!(only(&clean("flock --timeout=3 -x l --command 'rm x'"), "rm").argv, vec!["rm", "x"]);
    // `flock FD` locks an open descriptor and runs nothing.
    let c = clean("flock -n 9");
    assert_eq!(programs(&c), vec!["flock"]);
    assert!(c.redirections.is_empty());
    assert_eq!(kinds(&clean("flock l -c 'rm x' extra")), vec![OpaqueKind::WrapperOption]);
}

#[test]
fn chroot_runs_its_command_or_a_shell() {
    let a = clean("chroot --userspec=1000:1000 /srv/root rm -rf /");
    assert_eq!(only(&a, "rm").argv, vec!["rm", "-rf", "/"]);
    assert_eq!(only(&a, "rm").wrappers, vec!["chroot"]);
    assert_eq!(only(&clean("chroot --groups wheel /srv rm x"), "rm").argv, vec!["rm", "x"]);
    assert_eq!(kinds(&clean("echo 'rm x' | chroot /srv")), vec![OpaqueKind::StdinCode]);
    assert!(clean("chroot /srv").opaque.is_empty());
}

#[test]
fn busybox_applet_is_the_program() {
    let a = clean("busybox rm -rf x");
    let rm = only(&a, "rm");
    assert_eq!(rm.argv, vec!["rm", "-rf", "x"]);
    assert_eq!(rm.wrappers, vec!["busybox"]);
    let b = clean("busybox sh -c 'rm y'");
    assert_eq!(only(&b, "rm").wrappers, vec!["busybox", "sh"]);
    assert_eq!(kinds(&clean("curl x | busybox sh")), vec![OpaqueKind::StdinCode]);
    assert_eq!(programs(&clean("busybox --list")), vec!["busybox"]);
}

#[test]
fn stdbuf_ionice_setsid_taskset_unbuffer() {
    for (script, wrapper) in [
        ("stdbuf -oL rm x", "stdbuf"),
        ("stdbuf -o L -e0 rm x", "stdbuf"),
        ("stdbuf --output=L rm x", "stdbuf"),
        ("ionice -c 3 rm x", "ionice"),
        ("ionice -c2 -n7 -t rm x", "ionice"),
        ("ionice --class idle rm x", "ionice"),
        ("setsid rm x", "setsid"),
        ("setsid -fw rm x", "setsid"),
        ("taskset 0x3 rm x", "taskset"),
        ("taskset -c 0-3 rm x", "taskset"),
        ("taskset --cpu-list 1,2 rm x", "taskset"),
        ("unbuffer rm x", "unbuffer"),
        ("unbuffer -p rm x", "unbuffer"),
    ] {
        let a = clean(script);
        let rm = only(&a, "rm");
        assert_eq!(rm.argv, vec!["rm", "x"], "{script}");
        assert_eq!(rm.wrappers, vec![wrapper], "{script}");
        assert!(a.opaque.is_empty(), "{script}: {:?}", a.opaque);
    }
    // With a pid, ionice and taskset change a running process and run nothing.
    assert_eq!(programs(&clean("ionice -c 3 -p 123 456")), vec!["ionice"]);
    assert_eq!(programs(&clean("taskset -p 0x3 123")), vec!["taskset"]);
}

#[test]
fn nsenter_and_unshare() {
    for script in [
        "nsenter -t 1 -m -u -i -n -p rm x",
        "nsenter --target=1 --mount=/proc/1/ns/mnt rm x",
        "nsenter -a -t 1 -- rm x",
        "unshare -r rm x",
        "unshare --map-user=0 --fork --pid --mount-proc rm x",
        "unshare -Ufp -R /srv -w / rm x",
    ] {
        let a = clean(script);
        assert_eq!(only(&a, "rm").argv, vec!["rm", "x"], "{script}");
        assert!(a.opaque.is_empty(), "{script}: {:?}", a.opaque);
    }
    assert_eq!(only(&clean("unshare -r rm x"), "rm").wrappers, vec!["unshare"]);
    assert_eq!(kinds(&clean("echo 'rm x' | nsenter -t 1 -a")), vec![OpaqueKind::StdinCode]);
}

#[test]
fn systemd_run_command_environment_and_properties() {
    let a = clean("systemd-run --user --scope -p MemoryMax=1G -E LANG=C rm x");
    let rm = only(&a, "rm");
    assert_eq!(rm.argv, vec!["rm", "x"]);
    assert_eq!(rm.wrappers, vec!["systemd-run"]);
    assert_eq!(rm.env, vec![("LANG".into(), "C".into())]);
    assert!(a.opaque.is_empty());
    assert_eq!(only(&clean("systemd-run --unit=x --wait -t rm x"), "rm").argv, vec!["rm", "x"]);
    assert_eq!(
        kinds(&clean("systemd-run -p ExecStartPre='/bin/rm -rf /' true")),
        vec![OpaqueKind::WrapperOption]
    );
    assert_eq!(kinds(&clean("systemd-run -E LD_PRELOAD=/x.so ls")), vec![OpaqueKind::CodeInjectingVariable]);
    let remote = clean("systemd-run -H host rm x");
    assert_eq!(kinds(&remote), vec![OpaqueKind::RemoteCommand]);
    assert_eq!(programs(&remote), vec!["systemd-run"]);
}

#[test]
fn parallel_template_is_shell_code_with_dynamic_arguments() {
    let a = clean("parallel rm {} ::: a b");
    let rm = only(&a, "rm");
    assert_eq!(rm.argv, vec!["rm", "{}"]);
    assert_eq!(rm.wrappers, vec!["parallel"]);
    assert!(rm.dynamic);
    assert!(a.opaque.is_empty());
    let b = clean("parallel -j4 --keep-order 'gzip {}; rm {}' ::: *.log");
    assert_eq!(programs(&b), vec!["parallel", "gzip", "rm"]);
    assert!(b.commands[1..].iter().all(|c| c.dynamic && c.wrappers == ["parallel"]));
    assert_eq!(only(&clean("parallel -q rm {} ::: 'a b'"), "rm").argv, vec!["rm", "{}"]);
    assert_eq!(only(&clean("ls | parallel rm"), "rm").argv, vec!["rm"]);
    assert!(clean("parallel 'sort {} > {}.sorted' ::: a").redirections[0].dynamic);
    // Without a template, static arguments are the commands; inputs read at run time are opaque.
    let c = clean("parallel ::: 'rm x' 'ls -l'");
    assert_eq!(argvs(&c)[1..], [vec!["rm", "x"], vec!["ls", "-l"]]);
    assert_eq!(kinds(&clean("parallel < cmds.txt")), vec![OpaqueKind::StdinCode]);
    assert_eq!(kinds(&clean("parallel :::: cmds.txt")), vec![OpaqueKind::ShellCode]);
    assert_eq!(kinds(&clean("parallel echo '{= $_ = uc =}' ::: a")), vec![OpaqueKind::InterpreterCode]);
    assert_eq!(kinds(&clean("parallel -S host rm ::: a")), vec![OpaqueKind::RemoteCommand]);
    assert_eq!(
        redirs(&clean("parallel --joblog jobs.log ls ::: a")),
        vec![("parallel --joblog", "jobs.log", true)]
    );
}

#[test]
fn ssh_command_runs_remotely() {
    for script in [
        "ssh host rm -rf /",
        "ssh -p 2222 -i key user@host 'rm -rf /'",
        "ssh host -t rm x",
        "ssh -o StrictHostKeyChecking=no host -- ls",
        "echo 'rm x' | ssh host",
        "ssh -o RemoteCommand=ls host",
    ] {
        let a = clean(script);
        assert_eq!(kinds(&a), vec![OpaqueKind::RemoteCommand], "{script}");
        assert!(a.commands.iter().all(|c| c.program != "rm" && c.program != "ls"), "{script}");
        assert_eq!(a.commands.iter().filter(|c| c.program == "ssh").count(), 1, "{script}");
    }
    assert!(clean("ssh host").opaque.is_empty());
    assert!(clean("ssh -N -L 8080:localhost:80 host").opaque.is_empty());
    // Options that run local commands: opaque, and the inline command is judged.
    let a = clean("ssh -o ProxyCommand='rm -rf ~' host");
    assert_eq!(kinds(&a), vec![OpaqueKind::WrapperOption]);
    assert_eq!(only(&a, "rm").wrappers, vec!["ssh"]);
    assert_eq!(kinds(&clean("ssh -F ./evil_config host")), vec![OpaqueKind::WrapperOption]);
    assert!(clean("ssh -F /dev/null host").opaque.is_empty());
    assert_eq!(redirs(&clean("ssh -E ssh.log -N host")), vec![("ssh -E", "ssh.log", true)]);
    assert!(kinds(&analyze("ssh -Z host ls")).contains(&OpaqueKind::WrapperOption));
}

#[test]
fn awk_output_redirections_are_opaque() {
    for script in [
        "awk '{print > \"out.txt\"}' f",
        "awk '{print $1 >> \"/tmp/x\"}' f",
        "awk '{printf \"%s\\n\", $1 > $2}' f",
        "awk '{print | \"sh\"}' f",
        "awk '$1 > 5 { print $2 > \"big\" }' f",
        "gawk '@load \"filefuncs\"; BEGIN {}'",
    ] {
        assert_eq!(kinds(&clean(script)), vec![OpaqueKind::AwkCode], "{script}");
    }
    for script in [
        "awk '$1 > 5' f",
        "awk '{ if ($1 > 5) print $2 }' f",
        "awk '{print ($1 > 5)}' f",
        "awk '{print \"a > b\"}' f",
    ] {
        assert!(clean(script).opaque.is_empty(), "{script}");
    }
}

#[test]
fn sed_in_place_files_are_writes() {
    // The file itself is replaced (a file of the command); a backup is written as a redirection is.
    fn in_place(script: &str) -> Vec<String> {
        let a = clean(script);
        let files = a.commands.iter().flat_map(|c| &c.files).filter(|f| f.via == "sed -i").map(|f| {
            assert_eq!(f.role, FileRole::Write, "{script}");
            f.path.clone()
        });
        let backups = a.redirections.iter().filter(|r| r.op == "sed -i" && r.write).map(|r| r.target.clone());
        files.chain(backups).collect()
    }
    let a = clean("sed -i 's/a/b/' f.txt ../g.txt");
    assert!(a.opaque.is_empty());
    assert_eq!(in_place("sed -i 's/a/b/' f.txt ../g.txt"), vec!["f.txt", "../g.txt"]);
    assert_eq!(in_place("sed -i -e 's/a/b/' -e '/x/d' f"), vec!["f"]);
    assert_eq!(in_place("sed --in-place=.orig 's/a/b/' d/f"), vec!["d/f", "d/f.orig"]);
    assert_eq!(in_place("sed -i'bak/*' 's/a/b/' d/f"), vec!["d/f", "bak/f"]);
    assert_eq!(in_place("sed -ni 's/a/b/p' f"), vec!["f"]);
    // `-ie` is `-i` with suffix `e`, not a script option.
    assert_eq!(in_place("sed -ie 's/a/b/' f"), vec!["f", "fe"]);
    assert!(in_place("sed 's/a/b/' f").is_empty());
    let dynamic = clean("sed -i \"s/a/b/\" \"$F\"");
    assert!(dynamic.commands[0].files.iter().any(|f| f.via == "sed -i" && f.dynamic));
    // perl -i is interpreter code anyway.
    assert_eq!(kinds(&clean("perl -pi -e 's/a/b/' f")), vec![OpaqueKind::InterpreterCode]);
    assert_eq!(kinds(&clean("perl -i.bak -pe 's/a/b/' f")), vec![OpaqueKind::InterpreterCode]);
}

#[test]
fn wrappers_nest() {
    let a = clean("sudo -u bob watch -n 5 flock l timeout 3 busybox rm x");
    let rm = only(&a, "rm");
    assert_eq!(rm.wrappers, vec!["sudo", "watch", "flock", "timeout", "busybox"]);
    assert_eq!(rm.argv, vec!["rm", "x"]);
}

#[test]
fn older_wrappers_fail_closed_on_options_they_do_not_know() {
    for script in [
        "sudo --bogus rm -rf /",
        "sudo -Z rm x",
        "timeout --bogus 5 rm x",
        "nice -z rm x",
        "xargs --frobnicate rm",
        "env --nope rm x",
        "time -Q rm x",
        "exec -z rm x",
        "doas -x rm x",
    ] {
        let a = analyze(script);
        assert!(kinds(&a).contains(&OpaqueKind::WrapperOption), "{script}: {:?}", kinds(&a));
        assert!(
            programs(&a).contains(&"rm"),
            "the guessed command is still judged: {script}: {:?}",
            programs(&a)
        );
    }
    for script in [
        "sudo -u root -E rm x",
        "sudo -iu root rm x",
        "sudo --user=root --preserve-env=PATH rm x",
        "timeout --signal=KILL -k 5 10 rm x",
        "timeout -v 5 rm x",
        "xargs -0 -n1 -I{} rm {}",
        "xargs -i rm {}",
        "nice -10 rm x",
        "nice -n 5 rm x",
        "env -i -u X FOO=1 rm x",
        "time -p rm x",
        "exec -a name rm x",
        "doas -u root rm x",
        "command -p rm x",
    ] {
        let a = analyze(script);
        assert!(!kinds(&a).contains(&OpaqueKind::WrapperOption), "{script}: {:?}", kinds(&a));
        assert!(programs(&a).contains(&"rm"), "{script}: {:?}", programs(&a));
    }
}
