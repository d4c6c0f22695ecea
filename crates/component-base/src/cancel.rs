//! A minimal cancellation token (the workspace has no tokio-util): stop signals for servers,
//! workers and the leader loop.

use std::sync::Arc;
use tokio::sync::watch;

/// Cloneable; `cancel` wakes every `cancelled` waiter, now and later.
#[derive(Clone, Debug)]
pub struct CancellationToken {
    tx: Arc<watch::Sender<bool>>,
    rx: watch::Receiver<bool>,
}

impl Default for CancellationToken {
    fn default() -> Self {
        Self::new()
    }
}

impl CancellationToken {
    pub fn new() -> Self {
        let (tx, rx) = watch::channel(false);
        Self {
            tx: Arc::new(tx),
            rx,
        }
    }

    pub fn cancel(&self) {
        let _ = self.tx.send(true);
    }

    pub fn is_cancelled(&self) -> bool {
        *self.rx.borrow()
    }

    pub async fn cancelled(&self) {
        let mut rx = self.rx.clone();
        let _ = rx.wait_for(|v| *v).await;
    }

    /// A token cancelled when this one is, and also cancellable on its own.
    pub fn child(&self) -> Self {
        let child = Self::new();
        let parent = self.clone();
        let c = child.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = parent.cancelled() => c.cancel(),
                _ = c.cancelled() => {}
            }
        });
        child
    }
}
