//! The text convention: a tool whose ok value is a record with a
//! `text: string` field answers with that text for the agent, and with the
//! other fields as `structuredContent` for programs; an
//! `embedded: option<embedded-resource>` field is shown as an embedded
//! resource; a `content: list<block>` field (`ludus:plugin/content`) adds
//! its blocks after the text, and an ok value that is a `list<block>` is
//! the whole answer. (docs/design/contract.md, "From WIT to tools".)

use crate::plugin::schema::{Field, Shape};

/// The record fields that become `structuredContent`: all but the content fields.
pub fn structured_fields(record: &[Field]) -> Vec<Field> {
    record.iter().filter(|f| !is_content_field(f)).cloned().collect()
}

/// Record fields that are content, not data.
pub fn is_content_field(f: &Field) -> bool {
    is_text_field(f) || is_embedded_field(f) || is_blocks_field(f)
}

/// `content: list<block>`: blocks shown after the text.
pub fn is_blocks_field(f: &Field) -> bool {
    f.json == "content" && is_blocks(&f.shape)
}

/// `list<block>` of `ludus:plugin/content`, known by its cases.
pub fn is_blocks(shape: &Shape) -> bool {
    let Shape::List(inner) = shape else { return false };
    let Shape::Variant { cases, .. } = inner.as_ref() else { return false };
    cases.iter().map(|c| c.name.as_str()).eq(["text", "image", "audio", "resource"])
}

/// `text: string`: the text an agent reads.
pub fn is_text_field(f: &Field) -> bool {
    f.json == "text" && f.shape == Shape::String
}

/// `embedded: option<embedded-resource>`: a resource shown in the result.
pub fn is_embedded_field(f: &Field) -> bool {
    let inner = match &f.shape {
        Shape::Option(inner) => inner.as_ref(),
        other => other,
    };
    let Shape::Record { fields, .. } = inner else { return false };
    let names: Vec<&str> = fields.iter().map(|f| f.json.as_str()).collect();
    f.json == "embedded" && names == ["uri", "mime_type", "text"]
}
