//! Resources: the plugins' own and each game's (`chess://game/{session}/fen`),
//! listed in pages, read, subscribed to, and their `{session}` completed.

use std::sync::Arc;

use rmcp::ErrorData as McpError;
use rmcp::model::*;
use tokio_util::sync::CancellationToken;

use super::{Ludus, answer};
use crate::locking::lock;
use crate::plugin::{Audience, Plugin};
use crate::session::{Body, Caller};
use base64::Engine as _;

impl Ludus {
    /// One page of the plugins' own resources, once the first scan has
    /// settled (or a while has passed).
    pub(super) async fn resources_page(&self, page: Option<PaginatedRequestParams>) -> Result<ListResourcesResult, McpError> {
        self.registry.settled(super::LIST_PATIENCE).await;
        let resources = self
            .registry
            .plugins()
            .iter()
            .flat_map(|p| {
                p.resources.iter().filter(|r| !r.is_template()).map(|r| {
                    Resource::new(r.uri.clone(), r.name.clone()).with_description(r.description.clone()).with_mime_type(r.mime_type.clone())
                })
            })
            .collect();
        let (resources, next) = self.page(resources, page)?;
        let mut result = ListResourcesResult::with_all_items(resources);
        result.next_cursor = next;
        Ok(result)
    }

    /// One page of the per-game resource templates, likewise.
    pub(super) async fn templates_page(&self, page: Option<PaginatedRequestParams>) -> Result<ListResourceTemplatesResult, McpError> {
        self.registry.settled(super::LIST_PATIENCE).await;
        let templates = self
            .registry
            .plugins()
            .iter()
            .flat_map(|p| {
                p.resources.iter().filter(|r| r.is_template()).map(|r| {
                    let mut t = ResourceTemplate::new(r.uri.clone(), r.name.clone());
                    t.description = Some(r.description.clone());
                    t.mime_type = Some(r.mime_type.clone());
                    t
                })
            })
            .collect();
        let (templates, next) = self.page(templates, page)?;
        let mut result = ListResourceTemplatesResult::with_all_items(templates);
        result.next_cursor = next;
        Ok(result)
    }

    /// `resources/read`, for a caller who may read it.
    pub(super) async fn read(&self, uri: String, caller: &Caller) -> Result<ReadResourceResult, McpError> {
        let (plugin, mime, session) = self.resource_or_wait(&uri).await?;
        let session = session.as_ref().map(|(id, audience)| (id.as_str(), *audience));
        let contents = match self.registry.sessions.read_resource(&plugin, &uri, session, caller).await {
            Ok(Body::Text(text)) => ResourceContents::text(text, uri),
            Ok(Body::Blob(bytes)) => ResourceContents::blob(base64::engine::general_purpose::STANDARD.encode(bytes), uri),
            Err(e) => return Err(McpError::invalid_params(e.to_string(), None)),
        };
        Ok(ReadResourceResult::new(vec![contents.with_mime_type(mime)]))
    }

    /// `resources/subscribe`: from now on this client hears
    /// `notifications/resources/updated` whenever the game behind `uri`
    /// changes, or its plugin says it did (`watchers.changed`), until it
    /// unsubscribes, the game ends or the client goes.
    pub(super) async fn subscribe_to(&self, uri: String, caller: &Caller) -> Result<(), McpError> {
        let Some(outbox) = self.outbox.clone() else {
            return Err(McpError::invalid_request("resources/subscribe needs an MCP session to send the updates on", None));
        };
        let stop = CancellationToken::new();
        self.follow(uri.clone(), caller, Subscriber::Outbox(outbox), stop.clone()).await?;
        if let Some(old) = lock(&self.subscriptions).insert(uri, stop) {
            old.cancel();
        }
        Ok(())
    }

    /// Tells `subscriber` of every change of `uri` until `stop`, the game's
    /// end or the client's going; refused when there is no such resource or
    /// the caller may not read it.
    pub(super) async fn follow(
        &self,
        uri: String,
        caller: &Caller,
        subscriber: impl Into<Subscriber>,
        stop: CancellationToken,
    ) -> Result<(), McpError> {
        let subscriber = subscriber.into();
        let (plugin, _, session) = self.resource_or_wait(&uri).await?;
        let game = match session {
            Some((id, audience)) => Some(
                self.registry
                    .sessions
                    .watch_resource(&plugin, &uri, &id, audience, caller)
                    .await
                    .map_err(|e| McpError::invalid_params(e.to_string(), None))?,
            ),
            None => None,
        };
        let said = Said { changes: plugin.runtime.resource_changes.subscribe(), plugin: plugin.name.clone() };
        tokio::spawn(tell_changes(game, said, uri, subscriber, stop, self.gone.clone()));
        Ok(())
    }

    pub(super) fn unsubscribe_from(&self, uri: &str) {
        if let Some(stop) = lock(&self.subscriptions).remove(uri) {
            stop.cancel();
        }
    }

    /// Completes a resource template's `{session}`: the caller's own games of
    /// that plugin whose ids start with what is typed (never other callers'
    /// games, even where spectators may read them).
    pub(super) fn complete_session(&self, template: &str, argument: &ArgumentInfo, caller: &Caller) -> Result<CompleteResult, McpError> {
        let plugin = self.registry.plugins().into_iter().find(|p| p.resources.iter().any(|r| r.is_template() && r.uri == template));
        let Some(plugin) = plugin else {
            return Err(McpError::invalid_params(format!("no resource template {}", answer::brief(template.to_string())), None));
        };
        let typed = &argument.value;
        let mut ids: Vec<String> = match argument.name.as_str() {
            "session" => self
                .registry
                .sessions
                .list_for(caller)
                .into_iter()
                .filter(|s| s.plugin == plugin.name && s.ended.is_none() && s.id.starts_with(typed.as_str()))
                .map(|s| s.id)
                .collect(),
            _ => Vec::new(),
        };
        ids.sort();
        let total = ids.len();
        ids.truncate(CompletionInfo::MAX_VALUES);
        let values = CompletionInfo::with_pagination(ids, Some(total as u32), total > CompletionInfo::MAX_VALUES)
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        Ok(CompleteResult::new(values))
    }

    /// `find_resource`, waiting for the plugins directory's first scan when
    /// no game offers `uri` yet: it may be one of a game still being
    /// compiled, as a tool call waits for its tool.
    async fn resource_or_wait(&self, uri: &str) -> Result<FoundResource, McpError> {
        if let Ok(found) = self.find_resource(uri) {
            return Ok(found);
        }
        self.registry.settled(super::CALL_PATIENCE).await;
        self.find_resource(uri)
    }

    /// The plugin serving resource `uri`, its MIME type, and the game it
    /// belongs to (its id and who may read it) when it is a per-game one.
    pub(super) fn find_resource(&self, uri: &str) -> Result<FoundResource, McpError> {
        let found = self.registry.plugins().into_iter().find_map(|p| {
            let hit = p.resources.iter().find_map(|r| match r.session_in(uri) {
                Some(id) => Some((r.mime_type.clone(), Some((id.to_string(), r.audience)))),
                None => (r.uri == uri || r.matches_own_template(uri)).then(|| (r.mime_type.clone(), None)),
            });
            hit.map(|(mime, session)| (p, mime, session))
        });
        found.ok_or_else(|| McpError::invalid_params(format!("no resource {}", answer::brief(uri.to_string())), None))
    }
}

/// A resource's plugin, MIME type, and game (id, who may read it) if per-game.
type FoundResource = (Arc<Plugin>, String, Option<(String, Audience)>);

/// Where a subscriber hears of a change: its client's outbox
/// (`resources/subscribe`), or the stream of its `subscriptions/listen`
/// (protocol 2026-07-28).
pub(super) enum Subscriber {
    Outbox(super::Notify),
    Listen(super::listen::Listener),
}

impl From<super::listen::Listener> for Subscriber {
    fn from(listener: super::listen::Listener) -> Subscriber {
        Subscriber::Listen(listener)
    }
}

impl Subscriber {
    /// False once the subscriber cannot be told any more (an outbox is
    /// told until its client goes).
    #[allow(deprecated)]
    async fn updated(&self, uri: &str) -> bool {
        match self {
            Subscriber::Outbox(outbox) => {
                let updated = ResourceUpdatedNotification::new(ResourceUpdatedNotificationParam::new(uri.to_string()));
                outbox(ServerJsonRpcMessage::notification(updated.into()));
                true
            }
            Subscriber::Listen(listener) => listener.resource_updated(uri),
        }
    }
}

/// What plugins say changed (`watchers.changed`), heard for one plugin.
struct Said {
    changes: tokio::sync::broadcast::Receiver<(String, String)>,
    plugin: String,
}

/// Tells a subscriber of `uri` each change of its game (if it is a game's)
/// and each change its plugin reports, until `stop` (an unsubscribe), the
/// game's end, or the client's going.
#[allow(deprecated)]
async fn tell_changes(
    mut game: Option<tokio::sync::watch::Receiver<u64>>,
    mut said: Said,
    uri: String,
    subscriber: Subscriber,
    stop: CancellationToken,
    gone: CancellationToken,
) {
    use tokio::sync::broadcast::error::RecvError;
    loop {
        let game_changed = async {
            match &mut game {
                Some(changes) => changes.changed().await.is_ok(),
                None => std::future::pending().await,
            }
        };
        let changed = tokio::select! {
            // An unsubscribe comes first: a change made after it, found
            // ready beside it when the task next runs, is not told.
            biased;
            () = stop.cancelled() => return,
            () = gone.cancelled() => return,
            alive = game_changed => {
                if !alive {
                    return;
                }
                true
            }
            news = said.changes.recv() => match news {
                Ok((plugin, changed)) => plugin == said.plugin && changed == uri,
                Err(RecvError::Lagged(_)) => true,
                Err(RecvError::Closed) => false,
            },
        };
        if changed && !subscriber.updated(&uri).await {
            return;
        }
    }
}
