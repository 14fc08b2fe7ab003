//! A request's media types: what its client accepts (Accept, quality
//! weights and quoted strings read as RFC 9110 writes them) and what it
//! sends (Content-Type). An MCP client's POST accepts both JSON and event
//! streams and sends JSON; its GET accepts event streams.

use http::{HeaderMap, StatusCode, header};

use super::events::EVENT_STREAM;

pub const JSON: &str = "application/json";

/// Why a POST's media types cannot be served, if they cannot: its client
/// must accept JSON and event streams (406), and send JSON (415).
pub fn refused(headers: &HeaderMap) -> Option<(StatusCode, &'static str)> {
    if usual(headers) {
        return None;
    }
    if !(accepts(headers, JSON) && accepts(headers, EVENT_STREAM)) {
        let why = "an MCP client accepts both application/json and text/event-stream: send `Accept: application/json, text/event-stream`";
        return Some((StatusCode::NOT_ACCEPTABLE, why));
    }
    if !sends_json(headers) {
        return Some((StatusCode::UNSUPPORTED_MEDIA_TYPE, "a request to /mcp is JSON: send `Content-Type: application/json`"));
    }
    None
}

/// What the SDKs' clients send, compared whole: a JSON body, and one
/// Accept of both types.
fn usual(headers: &HeaderMap) -> bool {
    const BOTH: &[u8] = b"application/json, text/event-stream";
    let mut accept = headers.get_all(header::ACCEPT).iter();
    headers.get(header::CONTENT_TYPE).is_some_and(|v| v.as_bytes() == JSON.as_bytes())
        && accept.next().is_some_and(|v| v.as_bytes() == BOTH)
        && accept.next().is_none()
}

/// Whether the Accept headers take `media_type`: one of their media ranges
/// is it (any case) without a zero quality. Only the type itself counts,
/// not `*/*`: an MCP client names both types.
pub fn accepts(headers: &HeaderMap, media_type: &str) -> bool {
    let values = headers.get_all(header::ACCEPT).iter().filter_map(|v| v.to_str().ok());
    values.flat_map(|v| split_unquoted(v, ',')).any(|range| {
        let mut parts = split_unquoted(range, ';').map(str::trim);
        let essence = parts.next().unwrap_or_default();
        let refused = parts
            .any(|param| param.split_once('=').is_some_and(|(name, q)| name.trim().eq_ignore_ascii_case("q") && is_zero_weight(q.trim())));
        essence.eq_ignore_ascii_case(media_type) && !refused
    })
}

/// `value` split at each `delimiter` outside a quoted string (where a
/// backslash escapes the next character), as RFC 9110 lists and
/// parameters are written.
fn split_unquoted(value: &str, delimiter: char) -> impl Iterator<Item = &str> {
    let (mut quoted, mut escaped, mut start) = (false, false, 0);
    let mut cuts = value.char_indices().filter_map(move |(at, c)| {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            c if c == delimiter && !quoted => return Some(at),
            _ => {}
        }
        None
    });
    let mut done = false;
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        let (from, to) = match cuts.next() {
            Some(at) => (start, at),
            None => {
                done = true;
                (start, value.len())
            }
        };
        start = to + delimiter.len_utf8();
        Some(&value[from..to])
    })
}

/// Whether a quality weight is zero as RFC 9110 writes it (`0`, `0.`,
/// `0.0` to `0.000`). A weight outside its grammar is ignored, not read as
/// zero: the client listed the type, and is served it.
fn is_zero_weight(q: &str) -> bool {
    let (whole, fraction) = q.split_once('.').unwrap_or((q, ""));
    whole == "0" && fraction.len() <= 3 && fraction.bytes().all(|b| b == b'0')
}

/// The body is JSON, by its Content-Type's media type.
fn sends_json(headers: &HeaderMap) -> bool {
    headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|v| {
        let essence = v.split_once(';').map_or(v, |(essence, _)| essence);
        essence.trim_ascii().eq_ignore_ascii_case(JSON)
    })
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (name, value) in pairs {
            h.append(*name, HeaderValue::from_static(value));
        }
        h
    }

    const PLAIN: [(&str, &str); 2] =
        [("content-type", "application/json; charset=utf-8"), ("accept", "application/json, text/event-stream")];

    #[test]
    fn a_post_that_does_not_accept_both_types_or_send_json_is_refused() {
        let refused = |h: &[(&'static str, &'static str)]| refused(&headers(h)).map(|(status, _)| status.as_u16());
        assert_eq!(refused(&PLAIN), None);
        assert_eq!(refused(&[PLAIN[0], ("accept", "text/event-stream"), ("accept", "application/json")]), None, "two headers");
        assert_eq!(refused(&[PLAIN[0], ("accept", "application/json;q=0.9, text/event-stream;q=0.5")]), None, "weights above zero");
        assert_eq!(refused(&[PLAIN[0], ("accept", "application/json")]), Some(406));
        assert_eq!(refused(&[PLAIN[0], ("accept", "application/json, text/event-stream;q=0")]), Some(406));
        assert_eq!(refused(&[PLAIN[0]]), Some(406), "no Accept at all");
        assert_eq!(refused(&[("content-type", "text/plain"), PLAIN[1]]), Some(415));
        assert_eq!(refused(&[PLAIN[1]]), Some(415), "no Content-Type at all");
        assert_eq!(refused(&[("content-type", "Application/JSON ; charset=utf-8"), PLAIN[1]]), None);
    }

    #[test]
    fn quoted_strings_may_hold_commas_semicolons_and_escaped_quotes() {
        let refused = |accept: &'static str| refused(&headers(&[PLAIN[0], ("accept", accept)])).map(|(status, _)| status.as_u16());
        assert_eq!(refused("application/json;profile=\"a, text/event-stream\""), Some(406), "the second type is inside the quotes");
        assert_eq!(refused("application/json;profile=\"a, b\", text/event-stream"), None);
        assert_eq!(refused("application/json;x=\"a;q=0\", text/event-stream"), None, "the zero weight is quoted");
        assert_eq!(refused("application/json;x=\"a\\\";q=0\", text/event-stream"), None, "an escaped quote stays inside");
        assert_eq!(refused("application/json;x=\"a\";q=0, text/event-stream"), Some(406), "the weight after the quotes counts");
    }

    #[test]
    fn a_get_must_accept_event_streams_with_a_quality_above_zero() {
        let takes = |values: &[&'static str]| {
            let pairs: Vec<_> = values.iter().map(|v| ("accept", *v)).collect();
            accepts(&headers(&pairs), EVENT_STREAM)
        };
        assert!(takes(&["text/event-stream"]));
        assert!(takes(&["application/json, Text/Event-Stream;q=0.5"]));
        assert!(takes(&["application/json", "text/event-stream"]));
        assert!(!takes(&[]));
        assert!(!takes(&["application/json"]));
        assert!(!takes(&["text/event-stream;q=0"]));
        assert!(!takes(&["text/event-stream ; q=0.000"]));
        assert!(takes(&["text/event-stream;q=0.0000"]), "outside the grammar: ignored");
        assert!(takes(&["text/event-stream;q=00"]), "outside the grammar: ignored");
        assert!(takes(&["text/event-stream;q=0.001"]));
        assert!(!takes(&["*/*"]), "only the media type itself");
    }
}
