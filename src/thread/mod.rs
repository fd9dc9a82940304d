//! The thread's own arena and its flags ([`state`]), and their teardown at
//! thread exit ([`teardown`]).

pub(crate) mod state;
pub(crate) mod teardown;
