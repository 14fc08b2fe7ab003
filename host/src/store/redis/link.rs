//! The connection to Redis: one server, or a Redis Cluster whose client
//! routes each command to the shard of its keys' slot.

use std::time::Duration;

use redis::cluster::{ClusterClient, ClusterConnection};
use redis::{Client, Cmd, Connection, ConnectionLike, RedisResult, Value};

/// Where the games are: one Redis, or a Redis Cluster
/// (`redis+cluster://HOST:PORT,HOST:PORT…`), whose shards each keep the
/// games whose ids hash to their slots.
pub(super) enum Link {
    One(Client),
    Cluster { client: ClusterClient, first: String },
}

/// A connection to either.
pub(super) enum Con {
    One(Connection),
    Cluster(Box<ClusterConnection>),
}

/// The scheme of a Redis Cluster's address.
pub const CLUSTER_SCHEME: &str = "redis+cluster://";

impl Link {
    pub fn open(url: &str) -> RedisResult<Link> {
        let Some(nodes) = url.strip_prefix(CLUSTER_SCHEME) else { return Client::open(url).map(Link::One) };
        let nodes: Vec<String> = nodes.split(',').map(|node| format!("redis://{}", node.trim())).collect();
        let client = ClusterClient::builder(nodes.clone())
            .connection_timeout(Duration::from_secs(5))
            .response_timeout(Duration::from_secs(20))
            .build()?;
        Ok(Link::Cluster { client, first: nodes[0].clone() })
    }

    pub fn connect(&self) -> RedisResult<Con> {
        match self {
            Link::One(client) => client.get_connection_with_timeout(Duration::from_secs(5)).map(Con::One),
            Link::Cluster { client, .. } => client.get_connection().map(|c| Con::Cluster(Box::new(c))),
        }
    }

    /// A client to listen on: any node of a cluster hears every PUBLISH.
    pub fn listener(&self) -> RedisResult<Client> {
        match self {
            Link::One(client) => Ok(client.clone()),
            Link::Cluster { first, .. } => Client::open(first.as_str()),
        }
    }
}

impl Con {
    pub fn like(&mut self) -> &mut dyn ConnectionLike {
        match self {
            Con::One(con) => con,
            Con::Cluster(con) => con.as_mut(),
        }
    }

    /// Sends `commands` in one round trip (per shard, on a cluster); their answers, in order.
    pub fn pipeline(&mut self, commands: impl IntoIterator<Item = Cmd>) -> RedisResult<Vec<Value>> {
        match self {
            Con::One(con) => {
                let mut pipe = redis::pipe();
                for command in commands {
                    pipe.add_command(command);
                }
                pipe.query(con)
            }
            Con::Cluster(con) => {
                let mut pipe = redis::cluster::cluster_pipe();
                for command in commands {
                    pipe.add_command(command);
                }
                pipe.query(con.as_mut())
            }
        }
    }
}
