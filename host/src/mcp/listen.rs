//! `subscriptions/listen` (protocol 2026-07-28): a client without a session
//! names what it wants to hear (list changes, resource updates) in one
//! request, whose answer is a stream: the acknowledgement of what is
//! accepted first, then each change as it happens, every notification
//! carrying the request's id as its subscription id. The stream lasts until
//! its client drops it (or the server stops: then the request's final
//! result ends it).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_util::Stream;
use rmcp::ServerHandler;
use rmcp::model::{
    GetMeta, NotificationMetaObject, RequestId, ResourceUpdatedNotification, ResourceUpdatedNotificationParam, ServerJsonRpcMessage,
    ServerNotification, ServerResult, SubscriptionFilter, SubscriptionsAcknowledgedNotification,
    SubscriptionsAcknowledgedNotificationParams, SubscriptionsListenResult,
};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio_util::sync::{CancellationToken, DropGuard};

use super::Ludus;
use crate::session::Caller;

/// Where one listen request's notifications go: only those its accepted
/// filter names, each marked with the request's id.
#[derive(Clone)]
pub(super) struct Listener {
    id: RequestId,
    accepted: Arc<SubscriptionFilter>,
    to: UnboundedSender<ServerJsonRpcMessage>,
}

impl Listener {
    /// Sends `notification` if the filter accepted its kind; false once the
    /// stream is gone.
    pub(super) fn send(&self, mut notification: ServerNotification) -> bool {
        if !self.accepts(&notification) {
            return !self.to.is_closed();
        }
        notification.get_meta_mut().set_subscription_id(self.id.clone());
        self.to.send(ServerJsonRpcMessage::notification(notification)).is_ok()
    }

    pub(super) fn resource_updated(&self, uri: &str) -> bool {
        self.send(ResourceUpdatedNotification::new(ResourceUpdatedNotificationParam::new(uri.to_string())).into())
    }

    fn accepts(&self, notification: &ServerNotification) -> bool {
        let filter = &self.accepted;
        match notification {
            ServerNotification::ToolListChangedNotification(_) => filter.tools_list_changed == Some(true),
            ServerNotification::PromptListChangedNotification(_) => filter.prompts_list_changed == Some(true),
            ServerNotification::ResourceListChangedNotification(_) => filter.resources_list_changed == Some(true),
            ServerNotification::ResourceUpdatedNotification(update) => {
                filter.resource_subscriptions.as_ref().is_some_and(|uris| uris.contains(&update.params.uri))
            }
            _ => false,
        }
    }
}

/// The messages a listen request is answered with, in order; dropping it
/// stops what follows the changes.
pub struct Listening {
    messages: UnboundedReceiver<ServerJsonRpcMessage>,
    _stop: DropGuard,
}

impl Stream for Listening {
    type Item = ServerJsonRpcMessage;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<ServerJsonRpcMessage>> {
        self.messages.poll_recv(cx)
    }
}

impl Ludus {
    /// Answers `subscriptions/listen` `id` of `caller`, who asked to hear
    /// `requested`: what this server offers of it is accepted (the list
    /// changes it announces, the URIs that name a resource the caller may
    /// read), acknowledged, and followed.
    pub async fn listen(&self, id: RequestId, requested: &SubscriptionFilter, caller: &Caller) -> Listening {
        let accepted = self.accepted_filter(requested);
        let (to, messages) = unbounded_channel();
        let stop = CancellationToken::new();
        let mut acknowledged =
            SubscriptionsAcknowledgedNotification::new(SubscriptionsAcknowledgedNotificationParams::new(accepted.clone()));
        let mut meta = NotificationMetaObject::new();
        meta.set_subscription_id(id.clone());
        acknowledged.extensions.insert(meta);
        let _ = to.send(ServerJsonRpcMessage::notification(acknowledged.into()));
        let listener = Listener { id: id.clone(), accepted: Arc::new(accepted), to };
        for uri in listener.accepted.resource_subscriptions.clone().unwrap_or_default() {
            if let Err(e) = self.follow(uri.clone(), caller, listener.clone(), stop.clone()).await {
                tracing::debug!(uri, "subscriptions/listen: not followed: {}", e.message);
            }
        }
        tokio::spawn(self.clone().tell_listener_list_changes(id, listener, stop.clone()));
        Listening { messages, _stop: stop.drop_guard() }
    }

    /// What of `requested` this server offers: the list changes it
    /// announces, and the URIs that name one of its resources.
    fn accepted_filter(&self, requested: &SubscriptionFilter) -> SubscriptionFilter {
        let mut accepted = requested.supported_by(&self.get_info().capabilities);
        if let Some(uris) = &mut accepted.resource_subscriptions {
            uris.retain(|uri| self.find_resource(uri).is_ok());
        }
        if accepted.resource_subscriptions.as_ref().is_some_and(Vec::is_empty) {
            accepted.resource_subscriptions = None;
        }
        accepted
    }

    /// Tells `listener` of each change of the lists of tools and prompts
    /// until `stop` (the stream was dropped); when the server stops, the
    /// request's final result ends the stream.
    async fn tell_listener_list_changes(self, id: RequestId, listener: Listener, stop: CancellationToken) {
        let changes = self.registry.subscribe();
        if !super::tell_each_list_change(changes, stop.clone(), |change| listener.send(change)).await {
            return;
        }
        let mut result = SubscriptionsListenResult::complete(id.clone());
        result.meta.set_server_info(self.get_info().server_info);
        let _ = listener.to.send(ServerJsonRpcMessage::response(ServerResult::SubscriptionsListenResult(result), id));
        stop.cancel();
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::{PromptListChangedNotification, SubscriptionFilter, ToolListChangedNotification};

    use super::*;

    #[test]
    fn a_listener_sends_only_what_its_filter_accepted_marked_with_its_id() {
        let (to, mut messages) = unbounded_channel();
        let accepted = SubscriptionFilter::builder().tools_list_changed().resource_subscription("x://a").build();
        let listener = Listener { id: RequestId::Number(7), accepted: Arc::new(accepted), to };
        assert!(listener.send(PromptListChangedNotification::default().into()), "not accepted, not sent, still open");
        assert!(listener.resource_updated("x://b"));
        assert!(listener.send(ToolListChangedNotification::default().into()));
        assert!(listener.resource_updated("x://a"));
        let sent: Vec<serde_json::Value> =
            std::iter::from_fn(|| messages.try_recv().ok()).map(|m| serde_json::to_value(m).unwrap()).collect();
        assert_eq!(sent.len(), 2, "{sent:?}");
        assert_eq!(sent[0]["method"], "notifications/tools/list_changed");
        assert_eq!(sent[1]["params"]["uri"], "x://a");
        for m in &sent {
            assert_eq!(m["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 7, "{m}");
        }
        drop(messages);
        assert!(!listener.send(ToolListChangedNotification::default().into()), "the stream is gone");
    }
}
