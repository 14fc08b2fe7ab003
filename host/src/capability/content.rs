//! `ludus:plugin/content`: blocks of text, images, audio and resources, as
//! the contract types them (`Block`, from the guest's value when it comes
//! as a plain component value: `block_of_val`) and as MCP writes them
//! (JSON with base64 for bytes).

use base64::Engine as _;
use serde_json::{Value, json};
use wasmtime::component::Val;

use crate::runtime::bindings::ludus::plugin::content::{Block, Body, Media, ResourceContents};

fn base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A content block as MCP writes it.
pub fn block_json(block: &Block) -> Value {
    match block {
        Block::Text(text) => json!({"type": "text", "text": text}),
        Block::Image(m) => json!({"type": "image", "data": base64(&m.data), "mimeType": m.mime_type}),
        Block::Audio(m) => json!({"type": "audio", "data": base64(&m.data), "mimeType": m.mime_type}),
        Block::Resource(r) => json!({"type": "resource", "resource": resource_json(r)}),
    }
}

/// A resource's contents as MCP writes them.
pub fn resource_json(r: &ResourceContents) -> Value {
    match &r.body {
        Body::Text(text) => json!({"uri": r.uri, "mimeType": r.mime_type, "text": text}),
        Body::Blob(bytes) => json!({"uri": r.uri, "mimeType": r.mime_type, "blob": base64(bytes)}),
    }
}

/// A content block the client wrote.
pub fn block_of(v: &Value) -> Option<Block> {
    let bytes = |v: &Value| base64::engine::general_purpose::STANDARD.decode(v.as_str()?).ok();
    let media = |v: &Value| Some(Media { mime_type: v["mimeType"].as_str()?.to_string(), data: bytes(&v["data"])? });
    Some(match v["type"].as_str()? {
        "text" => Block::Text(v["text"].as_str()?.to_string()),
        "image" => Block::Image(media(v)?),
        "audio" => Block::Audio(media(v)?),
        "resource" => {
            let r = &v["resource"];
            let body = match (r["text"].as_str(), bytes(&r["blob"])) {
                (Some(text), _) => Body::Text(text.to_string()),
                (None, Some(blob)) => Body::Blob(blob),
                (None, None) => return None,
            };
            let mime_type = r["mimeType"].as_str().unwrap_or_default().to_string();
            Block::Resource(ResourceContents { uri: r["uri"].as_str()?.to_string(), mime_type, body })
        }
        _ => return None,
    })
}

/// A block from a guest's component value (a tool's answer, a prompt).
pub fn block_of_val(v: &Val) -> Option<Block> {
    let Val::Variant(case, Some(payload)) = v else { return None };
    Some(match (case.as_str(), payload.as_ref()) {
        ("text", Val::String(t)) => Block::Text(t.clone()),
        ("image", media) => Block::Image(media_of_val(media)?),
        ("audio", media) => Block::Audio(media_of_val(media)?),
        ("resource", Val::Record(fields)) => Block::Resource(ResourceContents {
            uri: string_field(fields, "uri")?,
            mime_type: string_field(fields, "mime-type")?,
            body: body_of_val(field(fields, "body")?)?,
        }),
        _ => return None,
    })
}

/// A resource body from a guest's component value.
pub fn body_of_val(v: &Val) -> Option<Body> {
    match v {
        Val::Variant(case, Some(payload)) => match (case.as_str(), payload.as_ref()) {
            ("text", Val::String(t)) => Some(Body::Text(t.clone())),
            ("blob", bytes) => Some(Body::Blob(bytes_of_val(bytes)?)),
            _ => None,
        },
        _ => None,
    }
}

fn media_of_val(v: &Val) -> Option<Media> {
    let Val::Record(fields) = v else { return None };
    Some(Media { mime_type: string_field(fields, "mime-type")?, data: bytes_of_val(field(fields, "data")?)? })
}

fn field<'a>(fields: &'a [(String, Val)], name: &str) -> Option<&'a Val> {
    fields.iter().find(|(n, _)| n == name).map(|(_, v)| v)
}

fn string_field(fields: &[(String, Val)], name: &str) -> Option<String> {
    match field(fields, name)? {
        Val::String(s) => Some(s.clone()),
        _ => None,
    }
}

fn bytes_of_val(v: &Val) -> Option<Vec<u8>> {
    let Val::List(items) = v else { return None };
    items.iter().map(|b| if let Val::U8(b) = b { Some(*b) } else { None }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn blocks_go_out_and_come_back_alike() {
        let blocks = [
            Block::Text("hi".into()),
            Block::Image(Media { mime_type: "image/png".into(), data: vec![1, 2, 3] }),
            Block::Audio(Media { mime_type: "audio/wav".into(), data: vec![0; 5] }),
            Block::Resource(ResourceContents { uri: "a://b".into(), mime_type: "text/plain".into(), body: Body::Text("t".into()) }),
            Block::Resource(ResourceContents { uri: "a://c".into(), mime_type: "image/png".into(), body: Body::Blob(vec![9]) }),
        ];
        for b in blocks {
            let json = block_json(&b);
            assert_eq!(block_json(&block_of(&json).unwrap()), json);
        }
        assert_eq!(block_json(&Block::Image(Media { mime_type: "image/png".into(), data: b"abc".to_vec() }))["data"], "YWJj");
        assert!(block_of(&json!({"type": "image", "data": "not base64!", "mimeType": "image/png"})).is_none());
    }
}
