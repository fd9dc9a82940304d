//! The thread's own arena and its flags ([`state`]), their teardown at
//! thread exit ([`teardown`]), and the last request a scope refused here
//! ([`refusal`]).

pub(crate) mod refusal;
pub(crate) mod state;
pub(crate) mod teardown;
