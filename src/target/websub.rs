//! The WebSub hub target (Ballerina/WSO2 dialect).
