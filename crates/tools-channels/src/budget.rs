//! The delivery budget: how much broadcast text one hook event injects, and that text.
//!
//! Sizes are estimated in tokens as bytes / 4, rounded up ([`estimate_tokens`]): cheap, needs
//! no tokenizer, and errs on the side of English prose (about four bytes a token), so a budget
//! is rarely exceeded in real tokens by much.
//!
//! One event's broadcasts are filled into the budget in delivery order (`critical`, then
//! `alert`, then `info`, newest first within each; [`store::delivery_order`]) until the next
//! line does not fit; what is left out is named in one summary line, channel by channel with
//! its `critical` and `alert` counts ([`summary_line`]), which the budget always has room for.

use std::fmt;

use serde_json::{Value, json};
use store::{Admission, Backlog, Delivery, Message, MessageView, Severity};

/// Environment variable: the token budget of the broadcasts one hook event injects.
pub const DELIVERY_BUDGET_ENV: &str = "HOOKS_MCP_DELIVERY_BUDGET";
/// The budget when [`DELIVERY_BUDGET_ENV`] is unset: about 8 KB of text.
pub const DEFAULT_BUDGET_TOKENS: u32 = 2_000;
/// The smallest budget accepted (room for the summary line and a few short messages).
pub const MIN_BUDGET_TOKENS: u32 = 200;
/// Bytes per token of the estimate.
pub const BYTES_PER_TOKEN: usize = 4;
/// The longest summary line ([`summary_line`]): the budget always keeps this much for it.
pub const SUMMARY_MAX_BYTES: usize = 256;

/// The estimated tokens of `text`: its UTF-8 length / [`BYTES_PER_TOKEN`], rounded up.
pub fn estimate_tokens(text: &str) -> usize {
    text.len().div_ceil(BYTES_PER_TOKEN)
}

/// How many tokens of broadcasts one event may inject (and one channel resource read return).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeliveryBudget {
    tokens: u32,
}

impl Default for DeliveryBudget {
    fn default() -> Self {
        DeliveryBudget::DEFAULT
    }
}

impl DeliveryBudget {
    /// [`DEFAULT_BUDGET_TOKENS`].
    pub const DEFAULT: DeliveryBudget = DeliveryBudget {
        tokens: DEFAULT_BUDGET_TOKENS,
    };

    /// A budget of `tokens`.
    ///
    /// # Errors
    /// A sentence when `tokens` is below [`MIN_BUDGET_TOKENS`].
    pub fn of_tokens(tokens: u32) -> Result<DeliveryBudget, String> {
        if tokens < MIN_BUDGET_TOKENS {
            return Err(format!(
                "{tokens} tokens is below the smallest budget, {MIN_BUDGET_TOKENS}"
            ));
        }
        Ok(DeliveryBudget { tokens })
    }

    /// Parses a [`DELIVERY_BUDGET_ENV`] value: a whole number of tokens; blank means the
    /// default.
    ///
    /// # Errors
    /// A sentence saying what is wrong with `text`.
    pub fn parse(text: &str) -> Result<DeliveryBudget, String> {
        let text = text.trim();
        if text.is_empty() {
            return Ok(DeliveryBudget::DEFAULT);
        }
        let tokens: u32 = text
            .parse()
            .map_err(|_| format!("`{text}` is not a whole number of tokens"))?;
        DeliveryBudget::of_tokens(tokens)
    }

    /// The budget from [`DELIVERY_BUDGET_ENV`], with a line for the operator when its value is
    /// invalid (the default applies then, or the smallest budget for a value below it).
    pub fn from_env() -> (DeliveryBudget, Option<String>) {
        match std::env::var(DELIVERY_BUDGET_ENV) {
            Err(_) => (DeliveryBudget::DEFAULT, None),
            Ok(text) => DeliveryBudget::from_setting(&text),
        }
    }

    /// [`DeliveryBudget::from_env`] for the value `text`.
    pub fn from_setting(text: &str) -> (DeliveryBudget, Option<String>) {
        match DeliveryBudget::parse(text) {
            Ok(budget) => (budget, None),
            Err(why) => {
                let budget = match text.trim().parse::<u32>() {
                    Ok(_) => DeliveryBudget {
                        tokens: MIN_BUDGET_TOKENS,
                    },
                    Err(_) => DeliveryBudget::DEFAULT,
                };
                let line = format!(
                    "{DELIVERY_BUDGET_ENV}: {why}; using {} tokens",
                    budget.tokens
                );
                (budget, Some(line))
            }
        }
    }

    /// The budget in tokens.
    pub fn tokens(self) -> u32 {
        self.tokens
    }

    /// The budget in bytes of text ([`BYTES_PER_TOKEN`] per token).
    pub fn bytes(self) -> usize {
        usize::try_from(self.tokens)
            .unwrap_or(usize::MAX)
            .saturating_mul(BYTES_PER_TOKEN)
    }

    /// The admission for one event's delivery ([`store::ChannelStore::deliver_within`]): it
    /// admits messages while their lines ([`render_line`]) fit in the budget, less the room of
    /// the summary line.
    pub fn for_event(self) -> EventBudget {
        EventBudget {
            left: self.bytes().saturating_sub(SUMMARY_MAX_BYTES + 1),
            admitted: 0,
        }
    }
}

/// One event's share of the budget, spent line by line ([`DeliveryBudget::for_event`]).
#[derive(Debug, Clone)]
pub struct EventBudget {
    left: usize,
    admitted: usize,
}

impl Admission for EventBudget {
    fn admit(&mut self, message: &Message) -> bool {
        let separator = usize::from(self.admitted > 0);
        let cost = line_len(message) + separator;
        if cost > self.left {
            return false;
        }
        self.left -= cost;
        self.admitted += 1;
        true
    }
}

/// The hook text for one message, e.g.
/// `[ALERT #12 deploys] db is down (ack: channel_acknowledge message_id=12)`: messages that
/// repeat until acknowledged (alert, critical) say how to acknowledge; `info` ones are shown
/// once and do not. A message to the session alone says so (`[ALERT #12 deploys, to you]`).
pub fn render_line(m: &Message) -> String {
    let mut line = String::new();
    // Writing into a `String` cannot fail.
    let _ = write_line(&mut line, m);
    line
}

/// The length in bytes of [`render_line`]'s text for `m`, counted without building it (an
/// event's admission measures every candidate line).
pub(crate) fn line_len(m: &Message) -> usize {
    let mut count = ByteCount(0);
    let _ = write_line(&mut count, m);
    count.0
}

/// Writes [`render_line`]'s text for `m` to `out`: the one place the line's form is kept.
fn write_line(out: &mut impl fmt::Write, m: &Message) -> fmt::Result {
    let level = match m.severity {
        Severity::Info => "INFO",
        Severity::Alert => "ALERT",
        Severity::Critical => "CRITICAL",
    };
    write!(out, "[{level} #{} {}", m.id, m.channel)?;
    if m.target.is_some() {
        out.write_str(", to you")?;
    }
    write!(out, "] {}", store::rules::on_one_line(&m.body))?;
    if m.severity != Severity::Info {
        write!(out, " (ack: channel_acknowledge message_id={})", m.id)?;
    }
    Ok(())
}

/// A [`fmt::Write`] that only counts the bytes written to it.
struct ByteCount(usize);

impl fmt::Write for ByteCount {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0 += s.len();
        Ok(())
    }
}

/// The hook text of one delivery: a line per message shown ([`render_line`]), in order, then
/// the summary of what was left out ([`summary_line`]). Empty when nothing was due. Within the
/// budget whose [`DeliveryBudget::for_event`] admitted the messages.
pub fn render_bounded(delivery: &Delivery) -> String {
    let mut text = String::new();
    for m in &delivery.shown {
        if !text.is_empty() {
            text.push('\n');
        }
        let _ = write_line(&mut text, m);
    }
    if let Some(summary) = summary_line(&delivery.unshown) {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&summary);
    }
    text
}

/// The one line that names what a delivery left out, at most [`SUMMARY_MAX_BYTES`] long, e.g.
/// `[MORE] 37 more on deploys (30: 1 critical, 4 alert), ci (7): see channel_read`. Channels
/// with `critical` messages come first, then the fullest; channels that do not fit are
/// counted together (`and 3 other channels (12: 1 critical)`), so no `critical` message is
/// left out without being counted. `None` when nothing was left out.
pub fn summary_line(unshown: &[Backlog]) -> Option<String> {
    let mut backlogs: Vec<&Backlog> = unshown.iter().filter(|b| b.total() > 0).collect();
    if backlogs.is_empty() {
        return None;
    }
    backlogs.sort_by(|a, b| {
        b.critical
            .cmp(&a.critical)
            .then(b.total().cmp(&a.total()))
            .then(a.channel.cmp(&b.channel))
    });
    let total: u64 = backlogs.iter().map(|b| b.total()).sum();
    let head = format!("[MORE] {total} more on ");
    let end = ": see channel_read";
    // The longest prefix of channels named with the rest counted together still fits.
    let mut named = String::new();
    let mut best: Option<String> = None;
    for (i, backlog) in backlogs.iter().enumerate() {
        if i > 0 {
            named.push_str(", ");
        }
        named.push_str(&format!("{} ({})", backlog.channel, counts(backlog)));
        let rest = others(&backlogs[i + 1..]);
        let line = format!("{head}{named}{rest}{end}");
        if line.len() > SUMMARY_MAX_BYTES {
            break;
        }
        best = Some(line);
    }
    Some(best.unwrap_or_else(|| {
        let all = others(&backlogs);
        format!(
            "[MORE] {total} more on{}{end}",
            all.trim_start_matches(" and")
        )
    }))
}

/// `30: 1 critical, 4 alert`, or `7` with neither.
fn counts(b: &Backlog) -> String {
    let mut urgent = Vec::new();
    if b.critical > 0 {
        urgent.push(format!("{} critical", b.critical));
    }
    if b.alert > 0 {
        urgent.push(format!("{} alert", b.alert));
    }
    if urgent.is_empty() {
        b.total().to_string()
    } else {
        format!("{}: {}", b.total(), urgent.join(", "))
    }
}

/// ` and 3 other channels (12: 1 critical)` for the channels not named; empty for none.
fn others(rest: &[&Backlog]) -> String {
    if rest.is_empty() {
        return String::new();
    }
    let mut sum = Backlog::default();
    for b in rest {
        sum.critical += b.critical;
        sum.alert += b.alert;
        sum.info += b.info;
    }
    let noun = if rest.len() == 1 {
        "channel"
    } else {
        "channels"
    };
    format!(" and {} other {noun} ({})", rest.len(), counts(&sum))
}

/// The text of a channel resource (`hooks://channels/{channel}`) within `budget`: the JSON
/// `channel_read` answers (`{"messages": [...]}`, newest first), keeping the newest messages
/// whose JSON fits in the budget; when some do not, `"more"` counts them and `"note"` says
/// where they are. The channel resource's read calls this; a server that reads channel
/// resources another way can call it on the messages it read.
pub fn fit_channel_resource(
    channel: &str,
    views: &[MessageView],
    budget: DeliveryBudget,
) -> String {
    // Room for the envelope and the note.
    let mut left = budget.bytes().saturating_sub(SUMMARY_MAX_BYTES);
    let mut kept = Vec::new();
    for view in views {
        let text = view_json(view).to_string();
        let cost = text.len() + 1;
        if cost > left {
            break;
        }
        left -= cost;
        kept.push(text);
    }
    let more = views.len() - kept.len();
    let mut out = format!("{{\"messages\":[{}]", kept.join(","));
    if more > 0 {
        let note = format!(
            "{more} older message(s) left out to stay within {} tokens; channel_read \
             channel={channel} lists them",
            budget.tokens()
        );
        out.push_str(&format!(",\"more\":{more},\"note\":{}", Value::from(note)));
    }
    out.push('}');
    out
}

/// One message as `channel_read` lists it (`to` only for a message to one session).
pub(crate) fn view_json(v: &MessageView) -> Value {
    let m = &v.message;
    let mut view = json!({
        "id": m.id,
        "channel": m.channel,
        "severity": m.severity.as_str(),
        "message": m.body,
        "created_at": store::to_rfc3339(m.created_at),
        "expires_at": store::to_rfc3339(m.expires_at),
        "acknowledged": v.acknowledged,
    });
    if let Some(to) = &m.target {
        view["to"] = json!(to);
    }
    view
}
