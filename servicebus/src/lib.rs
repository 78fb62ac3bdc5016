//! hubload-servicebus: an Azure Service Bus sender over AMQP 1.0, and a local emulator.
