//! The command table as a trait: every command a method whose default forwards to a [`HubClient`], so a
//! front end that serves the table from more than one hub (the desktop app's inbox across hubs) overrides
//! only the commands it changes and forwards the rest. Made from [`crate::operator_commands!`] like every
//! other adapter: nothing here lists a command by hand.

use super::{ApiError, HubClient, Sink};
use std::future::Future;

macro_rules! trait_adapter {
    (
        calls { $( $(#[$doc:meta])* $name:ident ( $($arg:ident : $ty:ty),* $(,)? ) -> $out:ty ; )* }
        streams { $( $(#[$sdoc:meta])* $sname:ident ( $($sarg:ident : $sty:ty),* $(,)? ) -> $sout:ty ; )* }
    ) => {
        /// Every command of the table; each forwards to [`TableCalls::forward_to`] unless overridden.
        pub trait TableCalls: Send + Sync {
            /// The hub a command goes to unless its method says otherwise.
            fn forward_to(&self) -> HubClient;
            $(
                $(#[$doc])*
                fn $name(&self, $($arg: $ty),*) -> impl Future<Output = Result<$out, ApiError>> + Send {
                    let client = self.forward_to();
                    async move { client.$name($($arg),*).await }
                }
            )*
            $(
                $(#[$sdoc])*
                fn $sname(
                    &self,
                    $($sarg: $sty,)*
                    sink: Sink<$sout>,
                ) -> impl Future<Output = Result<u32, ApiError>> + Send {
                    let client = self.forward_to();
                    async move { client.$sname($($sarg,)* sink).await }
                }
            )*
        }
    };
}

crate::operator_commands!(trait_adapter);

impl TableCalls for HubClient {
    fn forward_to(&self) -> HubClient {
        self.clone()
    }
}
