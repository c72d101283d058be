"""The simulated broker (issue 13): a broker's part toward the controller, holding no message data.

``broker_lifecycle`` is its pure core (registration, heartbeats, the BrokerState machine), fed
events and time by the node edge, as the controller's core is by its own.
"""
