//! Several servers behind one endpoint, as the README deploys them: a real
//! Redis (Debian's `redis-server`) as their shared store and a real nginx
//! in front, configured with the repo's own `deploy/nginx-ludus.conf`. Both
//! run on 127.0.0.1 for the length of a test and stop with it. The
//! benchmarks use this file too (`LUDUS_BENCH=cluster`).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A service process, stopped when dropped.
pub struct Service {
    child: Child,
    pub url: String,
}

impl Drop for Service {
    /// Asks the service to stop (SIGTERM: nginx's master then stops its
    /// workers, which a SIGKILL of the master would leave running), and
    /// kills it only if it has not stopped within five seconds.
    fn drop(&mut self) {
        // SAFETY: kill(2) on the pid of a child this struct owns and has not reaped.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let asked = std::time::Instant::now();
        while asked.elapsed() < std::time::Duration::from_secs(5) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Where a Debian binary is, if installed (`.ci/run` installs both).
pub fn binary(name: &str) -> Option<PathBuf> {
    ["/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin"].iter().map(|d| Path::new(d).join(name)).find(|p| p.exists())
}

/// Redis and nginx, or why the test cannot run: printed, and the caller
/// returns; under CI (`CI` set), where `.ci/run` installs both, a missing
/// one fails the test instead, so that a broken install cannot pass as a skip.
pub fn services_present() -> bool {
    let missing: Vec<&str> = ["redis-server", "nginx"].into_iter().filter(|b| binary(b).is_none()).collect();
    if !missing.is_empty() {
        let why = format!("{} not installed (apt-get install redis-server nginx; .ci/run installs them)", missing.join(" and "));
        assert!(std::env::var_os("CI").is_none(), "CI is set and {why}");
        eprintln!("SKIPPED: {why}");
    }
    missing.is_empty()
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn wait_until_listening(port: u16, what: &str) {
    let t = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(t.elapsed() < Duration::from_secs(10), "{what} did not start listening on port {port}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A Redis of its own in `work`, persisting nothing (the servers die, not Redis).
pub fn redis(work: &Path) -> Service {
    let port = free_port();
    let dir = work.join("redis");
    std::fs::create_dir_all(&dir).unwrap();
    let child = Command::new(binary("redis-server").unwrap())
        .args(["--bind", "127.0.0.1", "--port", &port.to_string(), "--save", "", "--appendonly", "no"])
        .arg("--dir")
        .arg(&dir)
        .stdout(Stdio::null())
        .spawn()
        .expect("starting redis-server");
    wait_until_listening(port, "redis-server");
    Service { child, url: format!("redis://127.0.0.1:{port}") }
}

/// A Redis Cluster of `shards` masters (no replicas) in `work`, made with
/// `redis-cli --cluster create`: its `redis+cluster://` address names them all.
pub struct RedisCluster {
    pub nodes: Vec<Service>,
    pub url: String,
}

pub fn redis_cluster(work: &Path, shards: usize) -> RedisCluster {
    let ports: Vec<u16> = (0..shards).map(|_| free_port()).collect();
    let nodes: Vec<Service> = ports
        .iter()
        .map(|port| {
            let dir = work.join(format!("redis-{port}"));
            std::fs::create_dir_all(&dir).unwrap();
            let child = Command::new(binary("redis-server").unwrap())
                .args(["--bind", "127.0.0.1", "--port", &port.to_string(), "--save", "", "--appendonly", "no"])
                .args(["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"])
                .arg("--dir")
                .arg(&dir)
                .stdout(Stdio::null())
                .spawn()
                .expect("starting redis-server");
            wait_until_listening(*port, "redis-server");
            Service { child, url: format!("redis://127.0.0.1:{port}") }
        })
        .collect();
    let addresses: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
    let made = Command::new(binary("redis-cli").expect("redis-cli comes with redis-server"))
        .args(["--cluster", "create"])
        .args(&addresses)
        .args(["--cluster-replicas", "0", "--cluster-yes"])
        .output()
        .expect("running redis-cli --cluster create");
    assert!(made.status.success(), "redis-cli --cluster create: {}", String::from_utf8_lossy(&made.stdout));
    // Every node agrees the slots are covered before the cluster takes writes.
    let t = Instant::now();
    for port in &ports {
        loop {
            let info = Command::new(binary("redis-cli").unwrap()).args(["-p", &port.to_string(), "CLUSTER", "INFO"]).output().unwrap();
            if String::from_utf8_lossy(&info.stdout).contains("cluster_state:ok") {
                break;
            }
            assert!(t.elapsed() < Duration::from_secs(20), "the Redis Cluster did not settle");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    RedisCluster { nodes, url: format!("redis+cluster://{}", addresses.join(",")) }
}

/// nginx in front of the servers at `urls` (`http://ADDR/mcp`, named s1,
/// s2, … in order), configured in `dir` with `deploy/nginx-ludus.conf`
/// where only the addresses change: the MCP endpoint it serves.
pub fn nginx(dir: &Path, urls: &[&str]) -> Service {
    let dir = dir.to_path_buf();
    std::fs::create_dir_all(dir.join("temp")).unwrap();
    let port = free_port();
    let deploy = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/nginx-ludus.conf")).unwrap();
    // Fewer servers than the example: their lines go (before any address
    // changes, so that a real port cannot look like a documented one).
    let absent =
        |line: &str| (urls.len() + 1..=3).any(|i| line.contains(&format!("127.0.0.1:880{i}")) || line.contains(&format!("ludus_s{i}")));
    let mut site: String = deploy.lines().filter(|l| !absent(l)).map(|l| format!("{l}\n")).collect();
    site = site.replace("listen 127.0.0.1:8800;", &format!("listen 127.0.0.1:{port};"));
    for (i, url) in urls.iter().enumerate() {
        site =
            site.replace(&format!("127.0.0.1:880{};", i + 1), &format!("{};", url.trim_start_matches("http://").trim_end_matches("/mcp")));
    }
    std::fs::write(dir.join("ludus.conf"), site).unwrap();
    let temp = dir.join("temp");
    let t = temp.display();
    let main = format!(
        "daemon off;\npid {d}/nginx.pid;\nerror_log {d}/error.log warn;\nevents {{ worker_connections 1024; }}\nhttp {{\n  \
         access_log off;\n  client_body_temp_path {t}/body;\n  proxy_temp_path {t}/proxy;\n  fastcgi_temp_path {t}/fastcgi;\n  \
         uwsgi_temp_path {t}/uwsgi;\n  scgi_temp_path {t}/scgi;\n  include {d}/ludus.conf;\n}}\n",
        d = dir.display()
    );
    std::fs::write(dir.join("nginx.conf"), main).unwrap();
    let child = Command::new(binary("nginx").unwrap())
        .arg("-p")
        .arg(&dir)
        .arg("-c")
        .arg(dir.join("nginx.conf"))
        .arg("-e")
        .arg(dir.join("error.log"))
        .stdout(Stdio::null())
        .spawn()
        .expect("starting nginx");
    wait_until_listening(port, "nginx");
    Service { child, url: format!("http://127.0.0.1:{port}/mcp") }
}
