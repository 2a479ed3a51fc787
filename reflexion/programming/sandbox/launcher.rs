// The sandbox's entry for a compiled binary, in place of child.py's exec mode: the same steps
// in the same order, without an interpreter's start.
//
//   launcher [--net] [--uid N] [--rlimit RESOURCE:SOFT:HARD]... --cwd DIR -- COMMAND ARGS...
//
// --net: a new network namespace (as root directly, otherwise inside a new user namespace that
// maps the caller's own uid and gid; skipped where the kernel refuses). Each --rlimit lowers a
// limit, never above the current hard limit (-1: unlimited). Then no new privileges, the uid
// (no supplementary groups, gid = uid), the working directory, default handling of SIGPIPE and
// SIGXFSZ, and exec. A step that fails
// exits with status 120 and a line on stderr, before anything of the command runs.
use std::ffi::CString;
use std::os::raw::{c_char, c_int, c_long, c_ulong};

#[repr(C)]
struct Rlimit {
    soft: c_ulong,
    hard: c_ulong,
}

extern "C" {
    fn unshare(flags: c_int) -> c_int;
    fn getrlimit(resource: c_int, limit: *mut Rlimit) -> c_int;
    fn setrlimit(resource: c_int, limit: *const Rlimit) -> c_int;
    fn prctl(option: c_int, ...) -> c_int;
    fn setgroups(size: usize, list: *const u32) -> c_int;
    fn setgid(gid: u32) -> c_int;
    fn setuid(uid: u32) -> c_int;
    fn geteuid() -> u32;
    fn getegid() -> u32;
    fn execv(path: *const c_char, argv: *const *const c_char) -> c_int;
    fn signal(signum: c_int, handler: usize) -> usize;
}

const SETUP_FAILED: i32 = 120;
const CLONE_NEWUSER: c_int = 0x10000000;
const CLONE_NEWNET: c_int = 0x40000000;
const PR_SET_NO_NEW_PRIVS: c_int = 38;
const INFINITY: c_ulong = !0;
const SIGPIPE: c_int = 13;
const SIGXFSZ: c_int = 25;
const SIG_DFL: usize = 0;

fn fail(what: &str) -> ! {
    let error = std::io::Error::last_os_error();
    eprintln!("sandbox setup failed: {}: {}", what, error);
    std::process::exit(SETUP_FAILED)
}

fn isolate_network() {
    // SAFETY: plain system calls on this process; failures leave it as it was.
    unsafe {
        let (uid, gid) = (geteuid(), getegid());
        if uid == 0 {
            unshare(CLONE_NEWNET);
            return;
        }
        if unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0 {
            return;
        }
        let _ = std::fs::write("/proc/self/setgroups", "deny");
        let _ = std::fs::write("/proc/self/uid_map", format!("{} {} 1", uid, uid));
        let _ = std::fs::write("/proc/self/gid_map", format!("{} {} 1", gid, gid));
    }
}

fn lower(resource: c_int, soft: c_ulong, hard: c_ulong) {
    let mut current = Rlimit { soft: 0, hard: 0 };
    // SAFETY: `current` is a valid rlimit for the call to fill.
    if unsafe { getrlimit(resource, &mut current) } != 0 {
        fail("getrlimit");
    }
    let hard = if current.hard == INFINITY { hard } else { hard.min(current.hard) };
    let wanted = Rlimit { soft: soft.min(hard), hard };
    // SAFETY: `wanted` is a valid rlimit.
    if unsafe { setrlimit(resource, &wanted) } != 0 {
        fail("setrlimit");
    }
}

fn limit(text: &str) -> c_ulong {
    match text.parse::<i64>() {
        Ok(n) if n < 0 => INFINITY,
        Ok(n) => n as c_ulong,
        Err(_) => fail("an --rlimit value is not a number"),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mut net, mut uid, mut cwd) = (false, None::<u32>, None::<String>);
    let mut limits: Vec<(c_int, c_ulong, c_ulong)> = Vec::new();
    let mut i = 0;
    while i < args.len() && args[i] != "--" {
        match args[i].as_str() {
            "--net" => net = true,
            "--uid" => {
                i += 1;
                uid = args.get(i).and_then(|u| u.parse().ok());
                if uid.is_none() {
                    fail("--uid needs a number");
                }
            }
            "--cwd" => {
                i += 1;
                cwd = args.get(i).cloned();
            }
            "--rlimit" => {
                i += 1;
                let parts: Vec<&str> = args.get(i).map_or(vec![], |a| a.split(':').collect());
                if parts.len() != 3 {
                    fail("--rlimit needs RESOURCE:SOFT:HARD");
                }
                let resource = parts[0].parse().unwrap_or_else(|_| fail("bad --rlimit"));
                limits.push((resource, limit(parts[1]), limit(parts[2])));
            }
            _ => fail("unknown option"),
        }
        i += 1;
    }
    let command: Vec<CString> = args
        .iter()
        .skip(i + 1)
        .map(|a| CString::new(a.as_bytes()).unwrap_or_else(|_| fail("a NUL in the command")))
        .collect();
    if command.is_empty() {
        fail("no command after --");
    }
    if net {
        isolate_network();
    }
    for (resource, soft, hard) in limits {
        lower(resource, soft, hard);
    }
    // SAFETY: plain system calls on this process; each result is checked.
    unsafe {
        prctl(PR_SET_NO_NEW_PRIVS, 1 as c_long, 0 as c_long, 0 as c_long, 0 as c_long);
        if let Some(uid) = uid {
            if setgroups(0, std::ptr::null()) != 0 {
                fail("setgroups");
            }
            if setgid(uid) != 0 {
                fail("setgid");
            }
            if setuid(uid) != 0 {
                fail("setuid");
            }
        }
    }
    if let Some(dir) = cwd {
        if std::env::set_current_dir(&dir).is_err() {
            fail("chdir");
        }
    }
    let mut argv: Vec<*const c_char> = command.iter().map(|a| a.as_ptr()).collect();
    argv.push(std::ptr::null());
    // SAFETY: default handling of the two signals the runtime changed (an ignored signal
    // stays ignored across exec); argv is a NULL-terminated array of valid C strings that
    // outlive the call.
    unsafe {
        signal(SIGPIPE, SIG_DFL);
        signal(SIGXFSZ, SIG_DFL);
        execv(argv[0], argv.as_ptr());
    }
    fail(&format!("cannot run {}", args[i + 1]))
}
