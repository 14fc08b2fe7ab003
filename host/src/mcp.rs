//! The MCP surface over the registry. A tool call reads top to bottom: look
//! the tool up → check and convert the arguments → run it in its session →
//! render the answer (text for the agent, structured content for programs;
//! `answer`).
//!
//! The transports hand every request of a client to the direct lane
//! (`Ludus::answer_directly`) themselves, not through rmcp's service loop,
//! which costs each request a channel send to the session's worker, a
//! spawned task and a channel back (taking it out saved 50–90 µs of an HTTP
//! `ping` on a 2-core machine, and put pipelined stdio answers in request
//! order; docs/design/mcp.md). rmcp's `ServerHandler` here gives only the
//! server's info and the handshake's choice of version.

use std::sync::Arc;

use rmcp::model::*;
use rmcp::{ErrorData as McpError, ServerHandler};
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::registry::Registry;
use crate::session::{Caller, Listeners, Progress, WaitProgress};

mod answer;
pub mod client;
mod convention;
mod host_tools;
pub mod inspect;
mod listen;
mod logging;
mod prompts;
mod resources;
mod tools;
use answer::json_len;
pub use answer::{Answer, Peer};
use host_tools::host_tools;
pub use listen::Listening;

/// Clients that ignore list_changed re-list after this long.
const TOOLS_TTL_MS: u64 = 10_000;

/// How long a list waits for the plugins directory's first scan: long
/// enough for cached compiles, short for a first compile (its tools follow
/// with `list_changed`).
const LIST_PATIENCE: std::time::Duration = std::time::Duration::from_secs(2);

/// How long a call to a tool no game offers waits for that scan to end
/// (the tool may be one of a game still being compiled).
const CALL_PATIENCE: std::time::Duration = std::time::Duration::from_secs(120);

/// What the MCP surface of one server keeps across its clients, shared by
/// every handler (`Ludus`, one per MCP session over HTTP).
#[derive(Default)]
pub struct Surface {
    /// What each client declared and chose; requests waiting for clients.
    pub clients: client::Clients,
    /// The plugins' tools as MCP lists them.
    tools: tools::Listed,
    /// The run the server was given (`ludus_next_game`).
    run: Option<Arc<crate::arena::Run>>,
}

#[derive(Clone)]
pub struct Ludus {
    registry: Arc<Registry>,
    surface: Arc<Surface>,
    /// This client, where the transport does not say (stdio: one client,
    /// one caller).
    caller: Caller,
    /// Cancelled when the MCP session's handler is dropped (the client
    /// closed, was deleted or expired): ends the tasks serving only it.
    gone: CancellationToken,
    _drop: Arc<DropGuard>,
    /// This client's `resources/subscribe`s, by URI: cancelling one stops it.
    subscriptions: Arc<std::sync::Mutex<std::collections::HashMap<String, CancellationToken>>>,
    /// Where this client hears what is sent outside any request (list
    /// changes, resource updates): stdout over stdio, its MCP session's
    /// standalone stream over HTTP. None for the handler of requests
    /// without a session, which cannot subscribe.
    outbox: Option<Notify>,
    /// Set once the client hears list changes (`initialized`): a second
    /// `notifications/initialized` must not double them.
    hears_lists: Arc<std::sync::Once>,
}

impl Ludus {
    /// The handler of a server with `registry`'s games and, if it was given one, a run.
    pub fn new(registry: Arc<Registry>, run: Option<Arc<crate::arena::Run>>) -> Self {
        Self::with_surface(registry, Arc::new(Surface { run, ..Default::default() }))
    }

    fn with_surface(registry: Arc<Registry>, surface: Arc<Surface>) -> Self {
        let gone = CancellationToken::new();
        Ludus {
            registry,
            surface,
            caller: Caller::Stdio,
            _drop: Arc::new(gone.clone().drop_guard()),
            gone,
            subscriptions: Default::default(),
            outbox: None,
            hears_lists: Arc::new(std::sync::Once::new()),
        }
    }

    /// A handler for another client of the same server (an MCP session over
    /// HTTP): the registry and the surface shared, its own subscriptions.
    pub fn another(&self) -> Self {
        Self::with_surface(self.registry.clone(), self.surface.clone())
    }

    /// This handler, its client hearing list changes and resource updates
    /// on `outbox`.
    pub fn with_outbox(mut self, outbox: Notify) -> Self {
        self.outbox = Some(outbox);
        self
    }

    /// What this server keeps about its clients.
    pub fn clients(&self) -> &client::Clients {
        &self.surface.clients
    }
}

/// The transport session of the stdio client.
pub const STDIO_SESSION: &str = "stdio";

/// Where the direct lane sends a request's progress notifications.
pub type Notify = Arc<dyn Fn(ServerJsonRpcMessage) + Send + Sync>;

/// A request the direct lane answers, ready to run.
pub type DirectAnswer = std::pin::Pin<Box<dyn std::future::Future<Output = Direct> + Send>>;

/// What the direct lane answers: a message, or a tool's answer, which the
/// transport writes itself, as a line (`into_line`) or an event (`into_message`).
// Made once per request and moved, not stored: boxing the message buys nothing.
#[allow(clippy::large_enum_variant)]
pub enum Direct {
    Message(ServerJsonRpcMessage),
    Tool(RequestId, Answer),
    /// Any other result (a list, a resource read), shaped for its peer when written.
    Result(RequestId, ServerResult),
}

impl Direct {
    /// The answer to request `id`: its result, or the error it met.
    fn of(id: RequestId, outcome: Result<ServerResult, McpError>) -> Direct {
        match outcome {
            Ok(result) => Direct::Result(id, result),
            Err(e) => Direct::Message(ServerJsonRpcMessage::error(e, Some(id))),
        }
    }

    /// The answer as a message, for `peer`.
    pub fn into_message(self, peer: Peer) -> ServerJsonRpcMessage {
        match self {
            Direct::Message(m) => m,
            Direct::Tool(id, answer) => ServerJsonRpcMessage::response(ServerResult::CallToolResult(answer.into_result_for(peer)), id),
            Direct::Result(id, mut result) => {
                peer.shape(&mut result);
                ServerJsonRpcMessage::response(result, id)
            }
        }
    }

    /// The answer as one line of JSON (without its newline), for `peer`.
    pub fn into_line(self, peer: Peer) -> Vec<u8> {
        match self {
            Direct::Tool(id, answer) => answer.into_response(id, peer),
            other => serde_json::to_vec(&other.into_message(peer)).unwrap_or_default(),
        }
    }
}

impl Ludus {
    /// Answers a request of this client without rmcp's service loop: a
    /// tool call, a ping, `initialize`, a log level, a subscription, or a
    /// request that only reads (the lists, a resource, a prompt, a
    /// completion); any other method is refused (-32601). `caller` is None
    /// for this client's own transport (stdio); `session` names the
    /// transport session (the client a game's requests go to, `client`);
    /// `ct` is cancelled when the request is (client gone, or
    /// `notifications/cancelled`); progress, and requests to the client,
    /// go to `notify`.
    pub fn answer_directly(
        &self,
        caller: Option<Caller>,
        session: &str,
        request: JsonRpcRequest<ClientRequest>,
        ct: CancellationToken,
        notify: Notify,
    ) -> DirectAnswer {
        let id = request.id;
        let answered = |direct| -> DirectAnswer { Box::pin(std::future::ready(direct)) };
        match request.request {
            ClientRequest::PingRequest(_) => answered(Direct::Result(id, ServerResult::empty(()))),
            ClientRequest::CallToolRequest(call) => {
                let this = self.clone();
                let caller = caller.unwrap_or_else(|| self.caller.clone());
                // rmcp's parser moves a request's `_meta` into its extensions.
                let meta = call.extensions.get::<RequestMetaObject>();
                let token = meta.and_then(RequestMetaObject::get_progress_token);
                let link = self.surface.clients.link(session, notify.clone(), token.clone(), ct.clone());
                let level = logging::wanted(meta, link.log_level());
                let client: Arc<dyn crate::capability::ClientLink> = link;
                let progress = token.map(|token| {
                    let notify = notify.clone();
                    progress_reporter(token, move |p| notify(ServerJsonRpcMessage::notification(ProgressNotification::new(p).into())))
                });
                let log = logging::sink_for(level, &call.params.name, move |m| notify(ServerJsonRpcMessage::notification(m.into())));
                let listeners = Listeners { progress, log, client: Some(client) };
                Box::pin(async move {
                    match this.call_tool_as(caller, call.params, ct, listeners).await {
                        Ok(answer) => Direct::Tool(id, answer),
                        Err(e) => Direct::Message(ServerJsonRpcMessage::error(e, Some(id))),
                    }
                })
            }
            ClientRequest::InitializeRequest(init) => {
                answered(Direct::of(id, self.initialize_session(session, &init.params).map(ServerResult::InitializeResult)))
            }
            // rmcp marks logging deprecated (a later protocol drops it); clients up to 2025-11-25 use it.
            #[allow(deprecated)]
            ClientRequest::SetLevelRequest(set) => {
                self.set_level_of(session, set.params.level);
                answered(Direct::Result(id, ServerResult::empty(())))
            }
            #[allow(deprecated)]
            ClientRequest::SubscribeRequest(subscribe) => {
                let this = self.clone();
                let caller = caller.unwrap_or_else(|| self.caller.clone());
                Box::pin(async move { Direct::of(id, this.subscribe_to(subscribe.params.uri, &caller).await.map(ServerResult::empty)) })
            }
            #[allow(deprecated)]
            ClientRequest::UnsubscribeRequest(unsubscribe) => {
                self.unsubscribe_from(&unsubscribe.params.uri);
                answered(Direct::Result(id, ServerResult::empty(())))
            }
            ClientRequest::DiscoverRequest(_) => answered(Direct::Result(id, self.discovered())),
            read => {
                let this = self.clone();
                let caller = caller.unwrap_or_else(|| self.caller.clone());
                Box::pin(async move { Direct::of(id, this.read_as(read, &caller).await) })
            }
        }
    }

    /// `initialize` of transport session `session`: what its client can
    /// do is noted (a game's questions go only to a client that can
    /// answer them), and the answer names the protocol version agreed on,
    /// as rmcp's handshake does.
    fn initialize_session(&self, session: &str, request: &InitializeRequestParams) -> Result<InitializeResult, McpError> {
        self.surface.clients.initialized(session, &request.capabilities);
        self.negotiate_initialize(request)
    }

    /// `notifications/initialized`: from now on the client hears, on its
    /// outbox, when the lists of tools and prompts change (a plugin came,
    /// went or changed), until it goes.
    pub fn initialized(&self) {
        self.hears_lists.call_once(|| self.tell_list_changes());
    }

    fn tell_list_changes(&self) {
        let Some(outbox) = self.outbox.clone() else { return };
        let changes = self.registry.subscribe();
        // Ends with the client, not at the next change: without a plugins
        // directory the list never changes, and each ended session's task
        // would stay for the life of the server.
        let gone = self.gone.clone();
        tokio::spawn(tell_each_list_change(changes, gone, move |change| {
            outbox(ServerJsonRpcMessage::notification(change));
            true
        }));
    }

    /// Ends what serves only this client (its subscriptions, its list
    /// changes) now, rather than when its last running call lets go of it.
    pub fn close(&self) {
        self.gone.cancel();
    }

    /// `server/discover`'s answer, as rmcp's handler makes it: the versions
    /// this server speaks, its capabilities and instructions.
    pub fn discovered(&self) -> ServerResult {
        ServerResult::DiscoverResult(DiscoverResult::from_server_info(self.supported_protocol_versions().into_owned(), self.get_info()))
    }

    /// A request that only reads (the lists, a resource, a prompt, a
    /// completion), whichever lane it came by, as `caller` may see it; any
    /// other method is one Ludus does not offer (tasks, skills, a method
    /// of its own), refused as rmcp's handler refuses it.
    async fn read_as(&self, request: ClientRequest, caller: &Caller) -> Result<ServerResult, McpError> {
        match request {
            ClientRequest::ListToolsRequest(r) => self.tools_page(r.params).await.map(ServerResult::ListToolsResult),
            ClientRequest::ListPromptsRequest(r) => self.prompts_page(r.params).await.map(ServerResult::ListPromptsResult),
            ClientRequest::ListResourcesRequest(r) => self.resources_page(r.params).await.map(ServerResult::ListResourcesResult),
            ClientRequest::ListResourceTemplatesRequest(r) => {
                self.templates_page(r.params).await.map(ServerResult::ListResourceTemplatesResult)
            }
            ClientRequest::ReadResourceRequest(r) => self.read(r.params.uri, caller).await.map(ServerResult::ReadResourceResult),
            ClientRequest::GetPromptRequest(r) => self.get_prompt_as(r.params).await.map(ServerResult::GetPromptResult),
            ClientRequest::CompleteRequest(r) => self.complete_as(r.params, caller).await.map(ServerResult::CompleteResult),
            other => Err(McpError::new(ErrorCode::METHOD_NOT_FOUND, other.method().to_string(), None)),
        }
    }

    /// Whether `request` answers with its result alone: any request but a
    /// tool call that may send something before its answer (progress asked
    /// for, log lines asked for in its `_meta` or by transport session
    /// `session` (`logging::asked`), a game that may ask its client
    /// something, unless the request has no session (empty `session`: a
    /// stateless client is asked nothing, `client::Link`)). Such a request
    /// may be answered as plain JSON rather than on an event stream.
    pub fn answers_alone(&self, session: &str, request: &ClientRequest) -> bool {
        let ClientRequest::CallToolRequest(call) = request else { return true };
        let meta = call.extensions.get::<RequestMetaObject>();
        meta.and_then(RequestMetaObject::get_progress_token).is_none()
            && !logging::asked(meta, self.surface.clients.log_level(session))
            && (session.is_empty() || !self.asks_its_client(request))
    }

    /// Whether `request` calls a tool of a game that may ask its client
    /// something (sampling, elicitation) while the call runs.
    fn asks_its_client(&self, request: &ClientRequest) -> bool {
        let ClientRequest::CallToolRequest(call) = request else { return false };
        self.registry.find_tool(&call.params.name).is_ok_and(|(plugin, _)| plugin.asks_client)
    }

    /// `tools/call`, whichever lane it came by.
    async fn call_tool_as(
        &self,
        caller: Caller,
        request: CallToolRequestParams,
        ct: CancellationToken,
        listeners: Listeners,
    ) -> Result<Answer, McpError> {
        let args = request.arguments.unwrap_or_default();
        if let Some(r) = self.host_call(&request.name, &args, &caller) {
            return Ok(r);
        }
        if let (host_tools::NEXT_GAME, Some(run)) = (request.name.as_ref(), &self.surface.run) {
            return Ok(self.next_game(run, &args, &caller).await);
        }
        self.plugin_call(&request.name, args, caller, ct, listeners).await
    }
}

impl Ludus {
    async fn plugin_call(
        &self,
        name: &str,
        args: JsonObject,
        caller: Caller,
        ct: CancellationToken,
        listeners: Listeners,
    ) -> Result<Answer, McpError> {
        let limits = &self.registry.config.limits;
        let size = json_len(&args);
        if size > limits.max_argument_bytes {
            return Ok(Answer::error(format!(
                "the arguments are {size} bytes; this server accepts at most {} bytes per call",
                limits.max_argument_bytes
            )));
        }
        let (plugin, index) = match self.registry.find_tool(name) {
            Err(_) if self.registry.scanning() => {
                self.registry.settled(CALL_PATIENCE).await;
                self.registry.find_tool(name)
            }
            found => found,
        }
        .map_err(|e| McpError::invalid_params(e, None))?;
        let reply = self.registry.sessions.call(plugin.clone(), index, &args, caller, ct, listeners).await;
        Ok(Answer::of(reply))
    }
}

/// Hands `tell` the notifications of each change of the lists of tools and
/// prompts (a plugin that came, went or changed may bring or take either)
/// until `stop`, or until `tell` says its hearer is gone (false). True when
/// the changes ended because the server stopped.
async fn tell_each_list_change(
    mut changes: tokio::sync::broadcast::Receiver<()>,
    stop: CancellationToken,
    mut tell: impl FnMut(ServerNotification) -> bool + Send,
) -> bool {
    loop {
        let change = tokio::select! {
            () = stop.cancelled() => return false,
            change = changes.recv() => change,
        };
        match change {
            Ok(()) | Err(RecvError::Lagged(_)) => {
                if !(tell(ToolListChangedNotification::default().into()) && tell(PromptListChangedNotification::default().into())) {
                    return false;
                }
            }
            Err(RecvError::Closed) => return true,
        }
    }
}

/// Progress of a waiting call, as notifications handed to `send`.
fn progress_reporter(token: ProgressToken, send: impl Fn(ProgressNotificationParam) + Send + Sync + 'static) -> Progress {
    Box::new(move |p: WaitProgress| {
        let (waited, total) = (p.waited_s, p.limit_s);
        let mut message = format!("waiting for the game to change ({waited} s of at most {total} s)");
        if let Some(news) = p.news {
            message = format!("{message}; its process says: {news}");
        }
        send(ProgressNotificationParam::new(token.clone(), waited as f64).with_total(total as f64).with_message(message))
    })
}

impl Ludus {
    /// `tools/list`: host tools first, then every game's, sorted by name
    /// (a deterministic order helps client caches).
    async fn tools_page(&self, page: Option<PaginatedRequestParams>) -> Result<ListToolsResult, McpError> {
        self.registry.settled(LIST_PATIENCE).await;
        let mut plugin_tools: Vec<Tool> = self.registry.plugins().iter().flat_map(|p| self.surface.tools.of_plugin(p).to_vec()).collect();
        plugin_tools.sort_by(|a, b| a.name.cmp(&b.name));
        let mut tools = host_tools().to_vec();
        if self.surface.run.is_some() {
            tools.push(host_tools::run_tool().clone());
        }
        tools.extend(plugin_tools);
        let (tools, next) = self.page(tools, page)?;
        let mut result = ListToolsResult::with_all_items(tools).with_ttl_ms(TOOLS_TTL_MS).with_cache_scope(CacheScope::Public);
        result.next_cursor = next;
        Ok(result)
    }

    /// `logging/setLevel` of transport session `session`, whichever lane it
    /// came by (a stateless request has no session to keep a level for).
    #[allow(deprecated)]
    fn set_level_of(&self, session: &str, level: LoggingLevel) {
        if !session.is_empty() {
            self.surface.clients.set_log_level(session, level);
        }
    }

    /// `completion/complete`: a template's `{session}` (`complete_session`)
    /// or a prompt's argument (`complete_prompt`).
    async fn complete_as(&self, request: CompleteRequestParams, caller: &Caller) -> Result<CompleteResult, McpError> {
        match &request.r#ref {
            Reference::Resource(template) => self.complete_session(&template.uri, &request.argument, caller),
            Reference::Prompt(prompt) => self.complete_prompt(&prompt.name, &request.argument).await,
            _ => Err(McpError::invalid_params("completion/complete: unknown kind of reference", None)),
        }
    }

    /// One page of a list (`limits.list_page_size` items) from the request's
    /// cursor, and the cursor of the next page if there is one. A cursor is
    /// the position the page starts at, opaque to clients; a list that
    /// changed between pages (`list_changed`) is best listed again.
    fn page<T>(&self, mut items: Vec<T>, request: Option<PaginatedRequestParams>) -> Result<(Vec<T>, Option<String>), McpError> {
        let size = self.registry.config.limits.list_page_size.max(1);
        let start = match request.and_then(|r| r.cursor) {
            None => 0,
            Some(cursor) => cursor.parse::<usize>().ok().filter(|&at| at <= items.len()).ok_or_else(|| {
                McpError::invalid_params(
                    format!("cursor {:?} is not one this server gave; list again without a cursor", answer::brief(cursor)),
                    None,
                )
            })?,
        };
        let end = items.len().min(start + size);
        let next = (end < items.len()).then(|| end.to_string());
        items.truncate(end);
        Ok((items.split_off(start), next))
    }
}

impl ServerHandler for Ludus {
    #[allow(deprecated)]
    fn get_info(&self) -> ServerConfig {
        // Prompts come and go with the plugins (hot reload, the first scan
        // in the background): offered always, their list possibly empty.
        let caps = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_prompts()
            .enable_prompts_list_changed()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_logging()
            .enable_completions()
            .build();
        ServerConfig::new(caps).with_server_info(Implementation::new("ludus", env!("CARGO_PKG_VERSION"))).with_instructions(
            "Ludus serves games as tools named <game>_<action>. Start a game with its creating tool \
                 (e.g. hanoi_init_simulator), then pass the returned id to the other tools. \
                 `ludus_games` lists the loaded games; `ludus_sessions` the live ones.",
        )
    }
}
