"""The quorum controller (KIP-631): a pure core fed with requests, commits and a clock.

``quorum_controller.QuorumController`` is the core; each ``*_control`` module is one of Kafka's
control managers, a set of functions from (``ControllerContext``, request) to a
``ControllerResult`` that changes nothing. ``commands`` is the table of the APIs served.
"""
