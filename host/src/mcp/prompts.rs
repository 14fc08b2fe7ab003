//! Prompts the plugins offer (`ludus:plugin/prompts`): listed in pages, got
//! with their arguments checked here, and their arguments completed.

use std::sync::Arc;

use rmcp::ErrorData as McpError;
use rmcp::model::*;
use serde_json::{Value, json};
use wasmtime::component::Val;

use super::{Ludus, answer};
use crate::capability::content::{block_json, block_of_val};
use crate::plugin::{Plugin, PromptDef};

impl Ludus {
    /// One page of the plugins' prompts, once the first scan has settled (or
    /// a while has passed).
    pub(super) async fn prompts_page(&self, page: Option<PaginatedRequestParams>) -> Result<ListPromptsResult, McpError> {
        self.registry.settled(super::LIST_PATIENCE).await;
        let mut prompts: Vec<Prompt> =
            self.registry.plugins().iter().flat_map(|p| p.prompts.iter().map(listed).collect::<Vec<_>>()).collect();
        prompts.sort_by(|a, b| a.name.cmp(&b.name));
        let (prompts, next) = self.page(prompts, page)?;
        let mut result = ListPromptsResult::with_all_items(prompts);
        result.next_cursor = next;
        Ok(result)
    }

    /// `prompts/get`: the required arguments must be there, unknown ones are refused.
    pub(super) async fn get_prompt_as(&self, request: GetPromptRequestParams) -> Result<GetPromptResult, McpError> {
        let (plugin, prompt) = self.find_prompt(&request.name)?;
        let given = request.arguments.unwrap_or_default();
        if let Some(missing) = prompt.arguments.iter().find(|a| a.required && !given.contains_key(&a.name)) {
            return Err(McpError::invalid_params(
                format!("prompt {} needs argument `{}`: {}", prompt.name, missing.name, missing.description),
                None,
            ));
        }
        let mut pairs = Vec::new();
        for (name, value) in given {
            if !prompt.arguments.iter().any(|a| a.name == name) {
                let known: Vec<&str> = prompt.arguments.iter().map(|a| a.name.as_str()).collect();
                return Err(McpError::invalid_params(
                    format!("prompt {} has no argument `{}` (it takes: {})", prompt.name, answer::brief(name), known.join(", ")),
                    None,
                ));
            }
            let value = match value {
                Value::String(s) => s,
                other => other.to_string(),
            };
            pairs.push(Val::Tuple(vec![Val::String(name), Val::String(value)]));
        }
        let params = vec![Val::String(prompt.own.clone()), Val::List(pairs)];
        let out =
            self.registry.sessions.prompt_call(&plugin, false, params).await.map_err(|e| McpError::internal_error(e.to_string(), None))?;
        let messages = match out {
            Some(Val::Result(Ok(Some(list)))) => messages(&list),
            Some(Val::Result(Err(Some(e)))) => {
                let why = if let Val::String(s) = *e { s } else { "the prompt was refused".into() };
                return Err(McpError::invalid_params(why, None));
            }
            _ => return Err(McpError::internal_error("the plugin gave no prompt", None)),
        };
        let mut result = serde_json::from_value::<GetPromptResult>(json!({"messages": messages}))
            .map_err(|e| McpError::internal_error(format!("the plugin's prompt is not one MCP can carry: {e}"), None))?;
        result.description = Some(prompt.description.clone());
        Ok(result)
    }

    /// `completion/complete` for a prompt's argument.
    pub(super) async fn complete_prompt(&self, name: &str, argument: &ArgumentInfo) -> Result<CompleteResult, McpError> {
        let (plugin, prompt) = self.find_prompt(name)?;
        let params = vec![Val::String(prompt.own.clone()), Val::String(argument.name.clone()), Val::String(argument.value.clone())];
        let out =
            self.registry.sessions.prompt_call(&plugin, true, params).await.map_err(|e| McpError::internal_error(e.to_string(), None))?;
        let mut values: Vec<String> = match out {
            Some(Val::List(items)) => items.into_iter().filter_map(|v| if let Val::String(s) = v { Some(s) } else { None }).collect(),
            _ => Vec::new(),
        };
        let total = values.len();
        values.truncate(CompletionInfo::MAX_VALUES);
        let info = CompletionInfo::with_pagination(values, Some(total as u32), total > CompletionInfo::MAX_VALUES)
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        Ok(CompleteResult::new(info))
    }

    fn find_prompt(&self, name: &str) -> Result<(Arc<Plugin>, PromptDef), McpError> {
        for plugin in self.registry.plugins() {
            if let Some(p) = plugin.prompts.iter().find(|p| p.name == name) {
                return Ok((plugin.clone(), p.clone()));
            }
        }
        Err(McpError::invalid_params(format!("no prompt {}", answer::brief(name.to_string())), None))
    }
}

/// A prompt as `prompts/list` shows it.
fn listed(p: &PromptDef) -> Prompt {
    let arguments: Vec<Value> =
        p.arguments.iter().map(|a| json!({"name": a.name, "description": a.description, "required": a.required})).collect();
    let mut prompt = json!({"name": p.name, "description": p.description, "arguments": arguments});
    if let Some(title) = &p.title {
        prompt["title"] = json!(title);
    }
    serde_json::from_value(prompt).expect("a prompt's fields are MCP's")
}

/// A `list<message>` value as MCP's prompt messages (JSON).
fn messages(list: &Val) -> Vec<Value> {
    let Val::List(items) = list else { return Vec::new() };
    let message = |v: &Val| {
        let Val::Record(fields) = v else { return None };
        let role = fields.iter().find(|(n, _)| n == "role").and_then(|(_, v)| if let Val::Enum(r) = v { Some(r.clone()) } else { None })?;
        let content = fields.iter().find(|(n, _)| n == "content").and_then(|(_, v)| block_of_val(v))?;
        Some(json!({"role": role, "content": block_json(&content)}))
    };
    items.iter().filter_map(message).collect()
}
