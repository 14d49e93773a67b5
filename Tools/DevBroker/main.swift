import CRDKafka
import CSignetShims
import Dispatch
import Foundation
import Platform
import Schema

// signet-devbroker: a development Kafka broker. It hosts librdkafka's mock cluster
// (rdkafka_mock.h), which speaks the Kafka protocol on real TCP ports and serves consumer
// groups and idempotent producers, and relays a fixed bootstrap address to it (the mock
// listens on an ephemeral port; clients bootstrap through the relay, and the metadata then
// sends them to the mock broker's own listener). It creates every topic the schema module
// declares. Not for production: its data lives in this process's memory.
//
// It cannot keep its log across a restart. librdkafka 2.0.2's mock has no call to load a log
// or append records at chosen offsets, and recording from inside (a consumer writing a file)
// would trail the producers' acknowledgements, so a SIGKILL could still lose acknowledged
// events. A restarted broker is a new cluster instead: another cluster id (the mock derives it
// from its addresses), empty logs and no groups, on another ephemeral listener. The services
// cope with that (Tests/StackTests/BrokerRestartStackTests kills and restarts this process
// during a burst): the outbox relays send again what the old cluster acknowledged, and the
// consumers rejoin with new clients and read the new logs from the beginning.
//
//   SIGNET_DEVBROKER_ADDRESS   bootstrap address to listen on (default 127.0.0.1:19092)
//   SIGNET_DEVBROKER_PIDFILE   write the pid here (tests use it to send signals)
//   SIGUSR1 takes the broker down (connections dropped, data kept), SIGUSR2 brings it back,
//   SIGTERM/SIGINT stop it.

let logger = Logger(label: "signet.devbroker")
let env = Environment()
let address = env.string("SIGNET_DEVBROKER_ADDRESS", default: "127.0.0.1:19092")
let parts = address.split(separator: ":")
guard parts.count == 2, let listenPort = UInt16(parts[1]) else {
    logger.critical("SIGNET_DEVBROKER_ADDRESS must be host:port")
    exit(78)
}
let listenHost = String(parts[0])

var errstr = [CChar](repeating: 0, count: 512)
guard let conf = rd_kafka_conf_new() else { exit(1) }
// The host instance has no bootstrap servers of its own; silence its notice about that.
rd_kafka_conf_set(conf, "log_level", "4", &errstr, errstr.count)
// The mock cluster needs a client instance to live in; this producer is never used to produce.
guard let rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, &errstr, errstr.count) else {
    logger.critical("rd_kafka_new failed", metadata: [LogKey.error: .string(stringFromCBuffer(errstr))])
    exit(1)
}
guard let cluster = rd_kafka_mock_cluster_new(rk, 1) else {
    logger.critical("rd_kafka_mock_cluster_new failed")
    exit(1)
}
let bootstrap = String(cString: rd_kafka_mock_cluster_bootstraps(cluster))
for topic in Topic.all {
    let err = rd_kafka_mock_topic_create(cluster, topic, Int32(Topic.developmentPartitions), 1)
    if err != RD_KAFKA_RESP_ERR_NO_ERROR {
        logger.critical("topic creation failed", metadata: [LogKey.topic: .string(topic)])
        exit(1)
    }
}
// The mock's listener is "127.0.0.1:PORT" (or a list); relay to its first broker.
let first = bootstrap.split(separator: ",")[0]
let target = first.split(separator: ":")
guard target.count == 2, let targetPort = UInt16(target[1]) else {
    logger.critical("unexpected mock bootstrap address", metadata: ["signet.bootstrap": .string(bootstrap)])
    exit(1)
}
let rc = signet_tcp_relay_start(listenHost, listenPort, String(target[0]), targetPort)
guard rc == 0 else {
    logger.critical("cannot listen", metadata: ["signet.address": .string(address), LogKey.error: .string(String(cString: strerror(-rc)))])
    exit(1)
}
if let pidfile = env.optionalString("SIGNET_DEVBROKER_PIDFILE") {
    try? "\(getpid())\n".write(toFile: pidfile, atomically: true, encoding: .utf8)
}
logger.notice(
    "development broker ready",
    metadata: ["signet.address": .string(address), "signet.mock.listener": .string(bootstrap), "signet.topics": .string(Topic.all.joined(separator: ","))])

struct MockCluster: @unchecked Sendable {
    // The mock cluster API is thread-safe (it posts operations to the cluster's thread).
    let pointer: OpaquePointer
}
let mock = MockCluster(pointer: cluster)
var sources: [any DispatchSourceSignal] = []
for (sig, action) in [(SIGUSR1, "down"), (SIGUSR2, "up"), (SIGTERM, "stop"), (SIGINT, "stop")] {
    signal(sig, SIG_IGN)
    let source = DispatchSource.makeSignalSource(signal: sig, queue: .main)
    source.setEventHandler {
        switch action {
        case "down":
            rd_kafka_mock_broker_set_down(mock.pointer, 1)
            logger.notice("broker set down")
        case "up":
            rd_kafka_mock_broker_set_up(mock.pointer, 1)
            logger.notice("broker set up")
        default:
            logger.notice("stopping")
            exit(0)
        }
    }
    source.resume()
    sources.append(source)
}
dispatchMain()
