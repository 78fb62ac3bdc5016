//! hubload-hub: a WebSub reference hub with proxy-style fault injection.
