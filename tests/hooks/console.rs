//! The operator console (`/console/`) of a real daemon (`hooks-mcp-full serve`, streamable
//! HTTP on 127.0.0.1, an ephemeral port), driven in Debian's Chromium through chromedriver:
//! the token is asked for and accepted, a broadcast published through the form is listed, one
//! published by the CLI from another process appears without a reload, an acknowledgement made
//! through a tool call moves the progress bar, a schedule is cancelled and a reminder added and
//! cleared with one click, stored `<script>`, `<img onerror>` and `javascript:` payloads render
//! as text, and a POST without the CSRF token is refused. Every page is saved as a screenshot
//! under `target/console-screenshots/`.
//!
//! Plain HTTP checks (no browser) cover the headers: the session cookie's flags, the
//! Content-Security-Policy, CSRF and `Origin` refusals, and the token-less loopback daemon.
//!
//! The browser tests need `chromium` and `chromedriver` (Debian's `chromium` and
//! `chromium-driver`, which `.ci/run` installs). Without them they fail under CI (`CI` or
//! `HOOKS_MCP_REQUIRE_BROWSER` set) and are skipped with a note elsewhere.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

use crate::forward::{Daemon, TOKEN};
use crate::support::{Env, fixture_for, http};

/// How long anything in the browser is waited for before the test gives up.
const PATIENCE: Duration = Duration::from_secs(20);

/// Stored text that would run if the console inserted it as HTML.
const XSS: &str = "<script>window.__xss = 1</script> <img src=x onerror=\"window.__xss = 2\"> \
                   <a href=\"javascript:window.__xss = 3\">click</a>";

/// Where the screenshots go: `target/console-screenshots/`.
fn screenshot_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("console-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Chromium and its driver, when installed.
struct Programs {
    chromium: PathBuf,
    driver: PathBuf,
}

fn find_program(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    names.iter().find_map(|name| {
        std::env::split_paths(&path)
            .chain([
                PathBuf::from("/usr/bin"),
                PathBuf::from("/usr/lib/chromium"),
            ])
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    })
}

impl Programs {
    /// The installed programs; `None` (after a note) where they are missing outside CI.
    fn find(test: &str) -> Option<Programs> {
        let chromium = find_program(&["chromium", "chromium-browser"]);
        let driver = find_program(&["chromedriver"]);
        match (chromium, driver) {
            (Some(chromium), Some(driver)) => Some(Programs { chromium, driver }),
            _ if std::env::var_os("CI").is_some()
                || std::env::var_os("HOOKS_MCP_REQUIRE_BROWSER").is_some() =>
            {
                panic!(
                    "{test}: chromium and chromedriver are required here (CI or \
                     HOOKS_MCP_REQUIRE_BROWSER); install Debian's `chromium` and \
                     `chromium-driver`"
                )
            }
            _ => {
                use std::io::Write;
                let _ = writeln!(
                    std::io::stderr(),
                    "note: chromium or chromedriver is not installed: {test} was skipped; \
                     `apt-get install chromium chromium-driver` to run it"
                );
                None
            }
        }
    }
}

/// A headless Chromium through chromedriver on an ephemeral loopback port.
struct Browser {
    client: Client,
    driver: Child,
    _profile: tempfile::TempDir,
}

impl Browser {
    async fn start(programs: &Programs) -> Browser {
        let port = {
            let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            probe.local_addr().unwrap().port()
        };
        let driver = Command::new(&programs.driver)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let profile = tempfile::tempdir().unwrap();
        let caps: serde_json::Map<String, Value> = serde_json::from_value(json!({
            "goog:chromeOptions": {
                "binary": programs.chromium,
                "args": [
                    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
                    format!("--user-data-dir={}", profile.path().display()),
                    "--window-size=1280,800",
                ],
            }
        }))
        .unwrap();
        let url = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + PATIENCE;
        let client = loop {
            let connector = hyper_util::client::legacy::connect::HttpConnector::new();
            match ClientBuilder::new(connector)
                .capabilities(caps.clone())
                .connect(&url)
                .await
            {
                Ok(client) => break client,
                Err(e) => {
                    assert!(
                        Instant::now() < deadline,
                        "chromedriver never answered: {e}"
                    );
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        };
        client.set_window_size(1280, 800).await.unwrap();
        Browser {
            client,
            driver,
            _profile: profile,
        }
    }

    async fn goto(&self, url: &str) {
        self.client.goto(url).await.unwrap();
    }

    async fn path(&self) -> String {
        self.client.current_url().await.unwrap().path().to_owned()
    }

    async fn js(&self, script: &str) -> Value {
        self.client.execute(script, vec![]).await.unwrap()
    }

    async fn text(&self, css: &str) -> String {
        self.client
            .find(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no `{css}` on the page: {e}"))
            .text()
            .await
            .unwrap()
    }

    /// Waits until `script` returns true.
    async fn until(&self, what: &str, script: &str) -> Duration {
        let started = Instant::now();
        loop {
            if self.js(script).await == json!(true) {
                return started.elapsed();
            }
            assert!(started.elapsed() < PATIENCE, "never: {what} ({script})");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Marks the current document, so that [`Browser::next_page`] can tell a new one.
    async fn mark_page(&self) {
        assert_eq!(
            self.js("window.__leaving = true; return true").await,
            json!(true)
        );
    }

    /// Waits for the document after the marked one to load.
    async fn next_page(&self) {
        self.until(
            "the next page loads",
            "return window.__leaving === undefined && document.readyState === 'complete'",
        )
        .await;
    }

    /// Submits `form` and waits for the page it leads to.
    async fn submit(&self, form: fantoccini::elements::Form) {
        self.mark_page().await;
        form.submit().await.unwrap();
        self.next_page().await;
    }

    /// Clicks the element `css` finds and waits for the page it leads to.
    async fn click_to_page(&self, css: &str) {
        self.mark_page().await;
        self.client
            .find(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no `{css}` on the page: {e}"))
            .click()
            .await
            .unwrap();
        self.next_page().await;
    }

    async fn screenshot(&self, name: &str) {
        let png = self.client.screenshot().await.unwrap();
        assert!(png.starts_with(b"\x89PNG"), "{name}: not a PNG");
        std::fs::write(screenshot_dir().join(format!("{name}.png")), png).unwrap();
    }

    async fn close(mut self) {
        let _ = self.client.clone().close().await;
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// A message's row holds this selector's element.
fn in_row(id: &str, css: &str) -> String {
    format!("document.querySelector('#message-{id} {css}')")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_in_chromium() {
    let Some(programs) = Programs::find("console::the_console_in_chromium") else {
        return;
    };
    let env = Env::new();
    env.set_condition(json!({
        "name": "script_as_text",
        "step": "pre",
        "matcher": "Bash",
        "script": "echo '<script>window.__xss = 4</script>' >&2",
    }));
    let daemon = Daemon::start(&env, None);
    let base = format!("http://127.0.0.1:{}", daemon.port);
    let b = Browser::start(&programs).await;

    // Signing in: the token is asked for, a wrong one refused, the right one accepted, and the
    // session cookie is out of the page's reach.
    b.goto(&format!("{base}/console/channels")).await;
    assert_eq!(b.path().await, "/console/login");
    b.screenshot("login").await;
    let form = b.client.form(Locator::Css("form")).await.unwrap();
    form.set_by_name("token", "not-the-token-0123456789")
        .await
        .unwrap();
    b.submit(form).await;
    b.until(
        "the refusal shows",
        "return document.querySelector('.problem') !== null",
    )
    .await;
    assert!(
        b.text(".problem").await.contains("not this daemon's token"),
        "a wrong token is refused"
    );
    let form = b.client.form(Locator::Css("form")).await.unwrap();
    form.set_by_name("token", TOKEN).await.unwrap();
    b.submit(form).await;
    assert_eq!(b.path().await, "/console/channels", "back where it started");
    assert_eq!(b.js("return document.cookie").await, json!(""));

    // Publishing through the form: listed, with the payloads as text.
    b.client
        .find(Locator::Css("details.publish summary"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let form = b.client.form(Locator::Css("form.publish")).await.unwrap();
    form.set_by_name("channel", "deploys").await.unwrap();
    form.set_by_name("message", XSS).await.unwrap();
    form.set_by_name("severity", "alert").await.unwrap();
    b.submit(form).await;
    assert!(
        b.text(".notice").await.starts_with("Published message #1"),
        "the form's publication is reported"
    );
    assert_eq!(b.text("#message-1 td.body").await, XSS);
    assert_eq!(
        b.js("return document.querySelectorAll('main script, main img, main a[href^=\"javascript\"]').length")
            .await,
        json!(0),
        "nothing stored became markup"
    );
    assert_eq!(b.js("return typeof window.__xss").await, json!("undefined"));
    assert_eq!(
        env.cli_json(&["audit"]).as_array().map(|items| items
            .iter()
            .any(|e| e["actor"] == json!({"kind": "token", "name": "console"}))),
        Some(true),
        "the console's change is audited as token:console"
    );

    // Two live sessions receive a global alert published by the CLI in another process: it
    // appears without a reload, with its delivery and acknowledgement bars.
    assert_eq!(
        b.js("window.__page = 'kept'; return true").await,
        json!(true)
    );
    for session in ["s1", "s2"] {
        env.hook("SessionStart", &fixture_for("session_start", session));
    }
    let published = Instant::now();
    env.cli(&[
        "channel",
        "publish",
        "global",
        "freeze merges",
        "--severity",
        "alert",
    ]);
    let cli_done = published.elapsed();
    let appeared = b
        .until(
            "the CLI's message appears",
            &format!("return {} !== null", in_row("2", "td.body")),
        )
        .await;
    assert_eq!(
        b.js("return window.__page").await,
        json!("kept"),
        "no reload"
    );
    let _ = writeln!(
        std::io::stderr(),
        "console: the CLI's publication appeared {:.0} ms after the CLI was started ({:.0} ms \
         after it returned)",
        (cli_done + appeared).as_secs_f64() * 1000.0,
        appeared.as_secs_f64() * 1000.0
    );
    for session in ["s1", "s2"] {
        let run = env.hook(
            "UserPromptSubmit",
            &fixture_for("user_prompt_submit", session),
        );
        assert!(
            run.context().contains("freeze merges"),
            "{session}: {run:?}"
        );
    }
    b.until(
        "both deliveries show",
        &format!(
            "return {}?.value === 2 && {}?.max === 2",
            in_row("2", "progress.delivered"),
            in_row("2", "progress.delivered")
        ),
    )
    .await;
    assert_eq!(
        b.js(&format!("return {}.value", in_row("2", "progress.acked")))
            .await,
        json!(0)
    );
    assert!(b.text("#message-2 .pending").await.contains("s1"));
    let answer = env.mcp_call(
        "channel_acknowledge",
        json!({ "message_id": 2, "session_id": "s1" }),
        &[],
    );
    assert_eq!(answer["isError"], json!(false), "{answer}");
    b.until(
        "the acknowledgement moves the bar",
        &format!("return {}?.value === 1", in_row("2", "progress.acked")),
    )
    .await;
    let pending = b.text("#message-2 .pending").await;
    assert!(
        pending.contains("s2") && !pending.contains("s1"),
        "{pending}"
    );
    b.screenshot("channels").await;
    b.client.set_window_size(390, 844).await.unwrap();
    assert_eq!(
        b.js("return document.documentElement.scrollWidth <= window.innerWidth")
            .await,
        json!(true),
        "at phone width nothing overflows sideways"
    );
    b.screenshot("channels-phone").await;
    b.client.set_window_size(1280, 800).await.unwrap();

    b.goto(&format!("{base}/console/messages/2")).await;
    assert!(b.text("main").await.contains("freeze merges"));
    b.screenshot("message").await;

    // Sessions: both live, s2 with one unacknowledged alert more than s1.
    b.goto(&format!("{base}/console/sessions")).await;
    let rows = b
        .js("return [...document.querySelectorAll('table.sessions tbody tr')].map(r => [r.cells[0].innerText, r.cells[6].innerText])")
        .await;
    let unacked = |session: &str| -> i64 {
        rows.as_array()
            .unwrap()
            .iter()
            .find(|r| r[0] == json!(session))
            .unwrap_or_else(|| panic!("{session} is not listed: {rows}"))[1]
            .as_str()
            .unwrap()
            .parse()
            .unwrap()
    };
    assert_eq!(unacked("s2"), unacked("s1") + 1, "{rows}");
    b.screenshot("sessions").await;

    // A schedule cancelled with one click.
    let created = env.cli_json(&[
        "schedule",
        "create",
        "ops",
        "standup <b>now</b>",
        "--cron",
        "0 9 * * 1-5",
        "--name",
        "standup",
    ]);
    let id = created["id"].as_i64().unwrap();
    b.goto(&format!("{base}/console/schedules")).await;
    assert_eq!(
        b.js(&format!(
            "return document.querySelector('#schedule-{id}').dataset.status"
        ))
        .await,
        json!("active")
    );
    assert!(
        b.text(&format!("#schedule-{id}"))
            .await
            .contains("standup <b>now</b>")
    );
    b.screenshot("schedules").await;
    b.click_to_page(&format!("#schedule-{id} button")).await;
    b.until(
        "the schedule shows cancelled",
        &format!("return document.querySelector('#schedule-{id}')?.dataset.status === 'cancelled'"),
    )
    .await;
    assert!(
        b.text(".notice")
            .await
            .contains(&format!("Cancelled schedule #{id}"))
    );
    let list = env.cli_json(&["schedule", "list"]);
    assert_eq!(list["schedules"][0]["status"], json!("cancelled"), "{list}");

    // A reminder added through the form and cleared with one click.
    b.goto(&format!("{base}/console/reminders")).await;
    b.client
        .find(Locator::Css("details.add-reminder summary"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let form = b
        .client
        .form(Locator::Css("form[action='/console/reminders']"))
        .await
        .unwrap();
    form.set_by_name("message", "run the tests").await.unwrap();
    form.set_by_name("cadence", "5").await.unwrap();
    b.submit(form).await;
    assert!(b.text(".notice").await.starts_with("Added reminder #"));
    assert!(b.text("table.reminders").await.contains("run the tests"));
    b.screenshot("reminders").await;
    b.click_to_page("table.reminders button").await;
    assert!(b.text(".notice").await.starts_with("Cleared reminder #"));
    assert!(
        b.js("return document.querySelector('table.reminders') === null")
            .await
            == json!(true)
    );

    // Conditions: the script is shown as text.
    b.goto(&format!("{base}/console/conditions")).await;
    assert!(
        b.text("#condition-script_as_text pre.script")
            .await
            .contains("<script>window.__xss = 4</script>")
    );
    assert_eq!(b.js("return typeof window.__xss").await, json!("undefined"));
    b.screenshot("conditions").await;

    // A POST without the CSRF token, or with another session's, is refused, and nothing is
    // published.
    for body in [
        "channel=x&message=forged",
        "channel=x&message=forged&csrf=00ff",
    ] {
        let status = b
            .client
            .execute_async(
                "const done = arguments[arguments.length - 1];
                 fetch('/console/publish', {method: 'POST', body: new URLSearchParams(arguments[0]),
                                            redirect: 'manual'})
                   .then(r => done(r.status), e => done(String(e)));",
                vec![json!(body)],
            )
            .await
            .unwrap();
        assert_eq!(status, json!(403), "{body}");
    }
    let read = env.cli_json(&["channel", "read", "--channel", "x"]);
    assert_eq!(read["messages"], json!([]), "{read}");

    b.goto(&format!("{base}/console/audit")).await;
    assert!(b.text("table.audit").await.contains("schedule_cancel"));
    b.screenshot("audit").await;
    // The overview's hook chart counts the HTTP hook events the daemon answered.
    let bearer = format!("Bearer {TOKEN}");
    for _ in 0..3 {
        let (status, _, _) = http(
            daemon.port,
            "POST",
            "/hooks/UserPromptSubmit",
            &[
                ("Authorization", &bearer),
                ("Content-Type", "application/json"),
            ],
            &fixture_for("user_prompt_submit", "s3").to_string(),
        );
        assert!(status == 200 || status == 204, "{status}");
    }
    b.goto(&format!("{base}/console/")).await;
    assert!(
        b.text("#tool-calls")
            .await
            .contains("Tool calls per minute")
    );
    assert_eq!(b.text("#hook-events .total").await, "3");
    // Keyboard: the first Tab reaches the skip link, which moves focus to the content.
    b.client
        .find(Locator::Css("body"))
        .await
        .unwrap()
        .send_keys("\u{E004}")
        .await
        .unwrap();
    assert_eq!(
        b.js("return document.activeElement.className").await,
        json!("skip")
    );
    b.client
        .active_element()
        .await
        .unwrap()
        .send_keys("\u{E007}")
        .await
        .unwrap();
    b.until(
        "Enter on the skip link focuses the content",
        "return document.activeElement.id === 'content'",
    )
    .await;
    b.screenshot("overview").await;
    b.close().await;
}

/// The value of a response header (the first), lower-cased name.
fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|line| {
        let (k, v) = line.split_once(':')?;
        k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// The `name=value` of a `Set-Cookie` header.
fn cookie_pair(set_cookie: &str) -> String {
    set_cookie.split(';').next().unwrap().trim().to_owned()
}

/// The CSRF token in a page's forms.
fn csrf_of(page: &str) -> String {
    let at = page.find("name=\"csrf\" value=\"").unwrap() + "name=\"csrf\" value=\"".len();
    page[at..].split('"').next().unwrap().to_owned()
}

#[test]
fn sessions_cookies_csrf_and_headers_over_plain_http() {
    let env = Env::new();
    let daemon = Daemon::start(&env, None);
    let port = daemon.port;

    // Without a session: pages redirect to the login page, the event stream is refused.
    let (status, head, _) = http(port, "GET", "/console/", &[], "");
    assert_eq!(status, 303);
    assert_eq!(
        header(&head, "location"),
        Some("/console/login?next=%2Fconsole%2F")
    );
    let (status, _, _) = http(port, "GET", "/console/events", &[], "");
    assert_eq!(status, 401);

    // The bearer token starts a session: HttpOnly, SameSite=Strict, on /console only.
    let bearer = format!("Bearer {TOKEN}");
    let (status, head, page) = http(
        port,
        "GET",
        "/console/channels",
        &[("Authorization", &bearer)],
        "",
    );
    assert_eq!(status, 200);
    let set_cookie = header(&head, "set-cookie").unwrap();
    for flag in ["HttpOnly", "SameSite=Strict", "Path=/console"] {
        assert!(set_cookie.contains(flag), "{set_cookie}");
    }
    let csp = header(&head, "content-security-policy").unwrap();
    assert!(
        csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"),
        "{csp}"
    );
    assert!(
        header(&head, "server-timing")
            .unwrap()
            .starts_with("app;dur=")
    );
    let cookie = cookie_pair(set_cookie);
    let csrf = csrf_of(&page);

    // A tampered cookie is no session.
    let mut forged = cookie.clone();
    forged.pop();
    forged.push(if cookie.ends_with('0') { '1' } else { '0' });
    let (status, _, _) = http(port, "GET", "/console/", &[("Cookie", &forged)], "");
    assert_eq!(status, 303, "a tampered cookie is sent to the login page");

    let form = [
        ("Cookie", cookie.as_str()),
        ("Content-Type", "application/x-www-form-urlencoded"),
    ];
    // No CSRF token, a wrong one, a cross-site Origin: refused, nothing published.
    let (status, _, body) = http(
        port,
        "POST",
        "/console/publish",
        &form,
        "channel=a&message=b",
    );
    assert_eq!(status, 403);
    assert!(body.contains("CSRF token"), "{body}");
    let (status, _, _) = http(
        port,
        "POST",
        "/console/publish",
        &form,
        &format!("channel=a&message=b&csrf={}", "0".repeat(csrf.len())),
    );
    assert_eq!(status, 403);
    let mut cross = form.to_vec();
    cross.push(("Origin", "http://evil.example"));
    let good = format!("channel=a&message=b&csrf={csrf}&back=%2Fconsole%2Fchannels");
    let (status, _, _) = http(port, "POST", "/console/publish", &cross, &good);
    assert_eq!(status, 403, "a cross-site Origin is refused as on /mcp");
    assert_eq!(
        env.cli_json(&["channel", "read"])["messages"],
        json!([]),
        "nothing was published"
    );
    // With everything right: published, and back to the page with the notice.
    let (status, head, _) = http(port, "POST", "/console/publish", &form, &good);
    assert_eq!(status, 303);
    assert!(
        header(&head, "location")
            .unwrap()
            .starts_with("/console/channels?notice=Published+message+%231"),
        "{head}"
    );
    // The page it leads to shows the notice; the same words in a link made elsewhere (a
    // phishing banner on the trusted console) are not shown, nor with another session's tag.
    let location = header(&head, "location").unwrap().to_owned();
    let cookie_only = [("Cookie", cookie.as_str())];
    let (status, _, page) = http(port, "GET", &location, &cookie_only, "");
    assert_eq!(status, 200);
    assert!(
        page.contains("role=\"status\">Published message #1"),
        "{page}"
    );
    let forged = "/console/channels?problem=Your+token+expired%3A+sign+in+at+evil.example";
    let (_, _, page) = http(port, "GET", forged, &cookie_only, "");
    assert!(!page.contains("evil.example"), "{page}");
    let (_, other_head, _) = http(port, "GET", "/console/", &[("Authorization", &bearer)], "");
    let other = cookie_pair(header(&other_head, "set-cookie").unwrap());
    let (_, _, page) = http(port, "GET", &location, &[("Cookie", &other)], "");
    assert!(!page.contains("Published message #1"), "{page}");
    // A bad lifetime is reported back, not published.
    let (status, head, _) = http(
        port,
        "POST",
        "/console/publish",
        &form,
        &format!("{good}&ttl_seconds=soon"),
    );
    assert_eq!(status, 303);
    assert!(
        header(&head, "location").unwrap().contains("problem="),
        "{head}"
    );
    assert_eq!(
        env.cli_json(&["channel", "read"])["messages"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    // Only console pages are redirect targets.
    let (_, head, _) = http(
        port,
        "POST",
        "/console/publish",
        &form,
        &format!("channel=a&message=c&csrf={csrf}&back=https%3A%2F%2Fevil.example%2F"),
    );
    assert!(
        header(&head, "location")
            .unwrap()
            .starts_with("/console/?notice="),
        "{head}"
    );

    // Clearing a message that is not there says so (the tool answers `removed: 0`).
    let clear = format!("csrf={csrf}&back=%2Fconsole%2Fchannels");
    let (status, head, _) = http(port, "POST", "/console/messages/99999/clear", &form, &clear);
    assert_eq!(status, 303);
    let location = header(&head, "location").unwrap();
    assert!(
        location.contains("problem=Not+cleared") && location.contains("99999"),
        "{head}"
    );
    let (_, head, _) = http(port, "POST", "/console/messages/1/clear", &form, &clear);
    assert!(
        header(&head, "location")
            .unwrap()
            .contains("notice=Cleared+message+%231"),
        "{head}"
    );

    // The live region's own request gets the region alone.
    let (status, _, live) = http(
        port,
        "GET",
        "/console/channels",
        &[("Cookie", &cookie), ("HX-Request", "true")],
        "",
    );
    assert_eq!(status, 200);
    assert!(
        !live.contains("<html") && live.contains("message-2") && !live.contains("message-1"),
        "{live}"
    );

    // A page offset that is not a number is refused, not read as the first page.
    for offset in ["abc", "-1"] {
        let path = format!("/console/sessions?offset={offset}");
        let (status, _, page) = http(port, "GET", &path, &[("Cookie", &cookie)], "");
        assert_eq!(status, 400, "{path}: {page}");
        assert!(
            page.contains("offset: not a whole number"),
            "{path}: {page}"
        );
    }

    // Assets are embedded, with their types.
    let (status, head, js) = http(port, "GET", "/console/assets/htmx.min.js", &[], "");
    assert_eq!(status, 200);
    assert!(
        header(&head, "content-type")
            .unwrap()
            .starts_with("text/javascript")
    );
    assert!(js.contains("htmx"));
    let (status, _, _) = http(port, "GET", "/console/assets/nothing.js", &[], "");
    assert_eq!(status, 404);
}

#[test]
fn without_a_token_every_loopback_browser_gets_a_session_and_the_stream_says_what_changed() {
    let env = Env::new();
    let daemon = Daemon::start_with(&env, None, None);
    let port = daemon.port;
    let (status, head, page) = http(port, "GET", "/console/", &[], "");
    assert_eq!(status, 200, "{head}");
    assert!(header(&head, "set-cookie").unwrap().contains("HttpOnly"));
    assert!(!page.contains("Sign out"), "no sign-out without a token");
    let (status, head, _) = http(port, "GET", "/console/login", &[], "");
    assert_eq!(
        (status, header(&head, "location")),
        (303, Some("/console/"))
    );

    // The event stream sends `change` once a publication from another process commits.
    let cookie = cookie_pair(header(&head_of(port), "set-cookie").unwrap());
    let took = change_reaches_the_stream(port, &[("Cookie", &cookie)], &page, || {
        env.cli(&["channel", "publish", "global", "hello"]);
    });
    let _ = writeln!(
        std::io::stderr(),
        "console: SQLite: a CLI publication reached the event stream in {:.0} ms",
        took.as_secs_f64() * 1000.0
    );
}

/// Opens `/console/events` (with `headers`, at the version `page` was read at), runs `change`,
/// and waits for the stream's `change` event; how long that took from `change`'s start.
fn change_reaches_the_stream(
    port: u16,
    headers: &[(&str, &str)],
    page: &str,
    change: impl FnOnce(),
) -> Duration {
    use std::io::Read;
    let version = page
        .split("/console/events?v=")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_owned();
    // The head first.
    let test_support::http::Open {
        mut stream, seen, ..
    } = test_support::http::open(
        test_support::http::loopback(port),
        "GET",
        &format!("/console/events?v={version}"),
        headers,
        "",
    );
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut seen = seen.into_bytes();
    let mut buf = [0u8; 4096];
    let head = String::from_utf8_lossy(&seen).into_owned();
    assert!(head.contains("text/event-stream"), "{head}");
    assert!(
        !head.contains("event: change"),
        "no change before there is one: {head}"
    );
    seen.clear();
    let started = Instant::now();
    change();
    while !String::from_utf8_lossy(&seen).contains("event: change") {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no change event"
        );
        let n = stream.read(&mut buf).unwrap();
        assert!(n > 0, "the stream closed");
        seen.extend_from_slice(&buf[..n]);
    }
    started.elapsed()
}

/// On PostgreSQL, a publication another process makes (the CLI, on the same database) reaches
/// an open console page's event stream: the store's notifications carry it.
#[test]
fn on_postgres_the_stream_hears_of_another_process_publishing() {
    let Some(db) = crate::forward::Database::new(
        "console::on_postgres_the_stream_hears_of_another_process_publishing",
    ) else {
        return;
    };
    let mut env = Env::new();
    env.vars
        .push(("HOOKS_MCP_DATABASE_URL".into(), db.url.clone()));
    let daemon = Daemon::start(&env, Some(&db.url));
    let bearer = format!("Bearer {TOKEN}");
    let auth = [("Authorization", bearer.as_str())];
    // The first page starts the store's listener; once it listens, pages carry the store's
    // change version (a page read before has none, and its stream re-reads every second).
    let deadline = Instant::now() + Duration::from_secs(30);
    let page = loop {
        let (status, _, page) = http(daemon.port, "GET", "/console/channels", &auth, "");
        assert_eq!(status, 200);
        if page.contains("/console/events?v=") {
            break page;
        }
        assert!(
            Instant::now() < deadline,
            "the listener never reported a version"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let took = change_reaches_the_stream(daemon.port, &auth, &page, || {
        env.cli(&["channel", "publish", "global", "from another process"]);
    });
    let _ = writeln!(
        std::io::stderr(),
        "console: PostgreSQL: a CLI publication reached the event stream in {:.0} ms",
        took.as_secs_f64() * 1000.0
    );
}

/// A fresh session's response head on a token-less daemon.
fn head_of(port: u16) -> String {
    http(port, "GET", "/console/reminders", &[], "").1
}
