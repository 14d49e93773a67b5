import CRDKafka
import CSignetShims
import Dispatch
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import Platform

/// A message to publish.
public struct KafkaOutgoingMessage: Sendable {
    public var topic: String
    public var key: String
    public var value: [UInt8]
    public var headers: [(name: String, value: String)]

    public init(topic: String, key: String, value: [UInt8], headers: [(name: String, value: String)] = []) {
        self.topic = topic
        self.key = key
        self.value = value
        self.headers = headers
    }
}

/// An idempotent producer (`enable.idempotence=true`, `acks=all`) whose `send` returns once the
/// broker has acknowledged the message, or throws its delivery error.
///
/// librdkafka's delivery reports are served by a dedicated polling thread; each message carries
/// a retained box with its continuation as the per-message opaque.
public final class KafkaProducer: @unchecked Sendable {
    // @unchecked Sendable: `rk` is immutable after init and librdkafka's producer API is
    // thread-safe; the running flag is atomic.
    private let rk: OpaquePointer
    private let running = AtomicFlag(true)
    private let pollerDone = DispatchSemaphore(value: 0)
    private let blockingQueue = DispatchQueue(label: "signet.kafka.producer.blocking")
    let logger: Logger

    /// - Parameter messageTimeoutMs: how long librdkafka retries a message before reporting
    ///   failure; the outbox relay retries failed batches itself, so a short value surfaces
    ///   broker outages quickly without losing anything.
    public init(configuration: KafkaConfiguration, logger: Logger, messageTimeoutMs: Int = 10_000) throws {
        self.logger = logger
        var props: [String: String] = [
            "bootstrap.servers": configuration.brokers,
            "client.id": configuration.clientID,
            "enable.idempotence": "true",
            "acks": "all",
            "linger.ms": "2",
            "message.timeout.ms": String(messageTimeoutMs),
            "socket.keepalive.enable": "true",
        ]
        props.merge(configuration.properties) { _, new in new }
        let conf = try makeRDKafkaConf(props)
        rd_kafka_conf_set_dr_msg_cb(conf, deliveryReportCallback)
        var errstr = [CChar](repeating: 0, count: 512)
        guard let rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, &errstr, errstr.count) else {
            rd_kafka_conf_destroy(conf)
            throw KafkaError(code: -1, message: stringFromCBuffer(errstr))
        }
        self.rk = rk
        let handle = RDKafkaHandle(rk: rk)
        let running = self.running
        let done = pollerDone
        // Delivery reports are served here, on a thread of our own, never the cooperative pool.
        startDetachedThread {
            nameCurrentThread("kafka-producer")
            while running.isSet {
                rd_kafka_poll(handle.rk, 100)
            }
            done.signal()
        }
    }

    deinit {
        running.set(false)
        pollerDone.wait()
        rd_kafka_destroy(rk)
    }

    /// Publishes `message` and waits for the broker's acknowledgement.
    public func send(_ message: KafkaOutgoingMessage) async throws {
        let results = await sendAll([message])
        if case .failure(let e) = results[0] { throw e }
    }

    /// Publishes every message, then waits for all their acknowledgements; results are in
    /// the order of `messages`.
    public func sendAll(_ messages: [KafkaOutgoingMessage]) async -> [Result<Void, KafkaError>] {
        if messages.isEmpty { return [] }
        // One waiter for the whole batch: each delivery report fills its slot, the last one
        // resumes this task (one wake-up per batch, no task per message).
        let batch = DeliveryBatch(count: messages.count)
        for (i, m) in messages.enumerated() {
            let err = enqueue(m, box: DeliveryBox(batch: batch, index: i))
            if err != 0 {
                // Not handed over: the delivery callback will never run for it.
                batch.complete(i, KafkaError(rd_kafka_resp_err_t(rawValue: err)))
            }
        }
        return await batch.results()
    }

    private func enqueue(_ m: KafkaOutgoingMessage, box: DeliveryBox) -> Int32 {
        // The headers laid end to end in one buffer, each as its two lengths, name and value
        // (the shim reads them back): one allocation a message where a copy per name, two per
        // value and the pointer arrays' growth made about thirty. librdkafka copies all of it.
        var packed: [UInt8] = []
        packed.reserveCapacity(m.headers.reduce(0) { $0 + 8 + $1.name.utf8.count + $1.value.utf8.count })
        for (name, value) in m.headers {
            guard let nameLength = UInt32(exactly: name.utf8.count), let valueLength = UInt32(exactly: value.utf8.count) else {
                return RD_KAFKA_RESP_ERR__INVALID_ARG.rawValue
            }
            withUnsafeBytes(of: nameLength) { packed.append(contentsOf: $0) }
            withUnsafeBytes(of: valueLength) { packed.append(contentsOf: $0) }
            packed.append(contentsOf: name.utf8)
            packed.append(contentsOf: value.utf8)
        }
        var key = m.key
        let opaque = Unmanaged.passRetained(box).toOpaque()
        func produce() -> Int32 {
            packed.withUnsafeBytes { headers in
                key.withUTF8 { key in
                    m.value.withUnsafeBytes { value in
                        m.topic.withCString { topic in
                            signet_kafka_produce(
                                UnsafeMutableRawPointer(rk), topic, -1,  // RD_KAFKA_PARTITION_UA
                                key.baseAddress, key.count, value.baseAddress, value.count,
                                headers.baseAddress, headers.count, m.headers.count, opaque)
                        }
                    }
                }
            }
        }
        var err = produce()
        var retries = 0
        // Queue full: wait for deliveries to drain it (non-blocking poll; the poll thread
        // serves callbacks).
        while err == RD_KAFKA_RESP_ERR__QUEUE_FULL.rawValue {
            retries += 1
            usleep(1000)
            guard retries < 1000 else { break }
            err = produce()
        }
        if err != 0 { Unmanaged<DeliveryBox>.fromOpaque(opaque).release() }
        return err
    }

    /// Whether the cluster answers a metadata request within `timeoutMs`.
    public func isBrokerReachable(timeoutMs: Int32 = 1000) async -> Bool {
        let handle = RDKafkaHandle(rk: rk)
        // Blocking metadata request: on a dedicated queue.
        return await runBlocking(on: blockingQueue) {
            var md: UnsafePointer<rd_kafka_metadata>?
            let err = rd_kafka_metadata(handle.rk, 0, nil, &md, timeoutMs)
            if let md { rd_kafka_metadata_destroy(md) }
            return err == RD_KAFKA_RESP_ERR_NO_ERROR
        }
    }

    /// The id of the cluster the producer last had metadata from (cached: does not block);
    /// nil before the first metadata, or from a broker too old to report one. A different id
    /// means another cluster, whose logs do not hold what was sent to the previous one.
    public func clusterID() -> String? {
        guard let id = rd_kafka_clusterid(rk, 0) else { return nil }
        defer { rd_kafka_mem_free(rk, id) }
        return String(cString: id)
    }

    /// Waits up to `timeoutMs` for every queued message to be delivered or fail.
    public func flush(timeoutMs: Int32 = 10_000) async {
        let handle = RDKafkaHandle(rk: rk)
        let err = await runBlocking(on: blockingQueue) { rd_kafka_flush(handle.rk, timeoutMs) }
        if err != RD_KAFKA_RESP_ERR_NO_ERROR {
            logger.warning("producer flush incomplete", metadata: [LogKey.error: "\(KafkaError(err))"])
        }
    }
}

/// An `rd_kafka_t` pointer that may cross threads (librdkafka handles are thread-safe).
struct RDKafkaHandle: @unchecked Sendable {
    let rk: OpaquePointer
}

/// The delivery outcomes of one ``KafkaProducer/sendAll(_:)`` batch, filled from librdkafka's
/// callbacks (on the producer's poll thread) and awaited once by the sending task.
final class DeliveryBatch: Sendable {
    private let state: PlainLock<State>

    struct State: Sendable {
        var results: [Result<Void, KafkaError>?]
        var remaining: Int
        var continuation: CheckedContinuation<[Result<Void, KafkaError>], Never>?
    }

    init(count: Int) {
        state = PlainLock(State(results: Array(repeating: nil, count: count), remaining: count, continuation: nil))
    }

    /// Records message `index`'s outcome (the first one only); the last resumes the waiter.
    func complete(_ index: Int, _ error: KafkaError?) {
        let result: Result<Void, KafkaError> = error.map { .failure($0) } ?? .success(())
        let ready = state.withLock { s -> (CheckedContinuation<[Result<Void, KafkaError>], Never>, [Result<Void, KafkaError>])? in
            guard s.results[index] == nil else { return nil }
            s.results[index] = result
            s.remaining -= 1
            guard s.remaining == 0, let c = s.continuation else { return nil }
            s.continuation = nil
            return (c, s.results.map { $0! })
        }
        if let (c, results) = ready { c.resume(returning: results) }
    }

    /// Every message's outcome, in order, once all are known.
    func results() async -> [Result<Void, KafkaError>] {
        await withCheckedContinuation { c in
            let ready = state.withLock { s -> [Result<Void, KafkaError>]? in
                if s.remaining == 0 { return s.results.map { $0! } }
                s.continuation = c
                return nil
            }
            if let ready { c.resume(returning: ready) }
        }
    }
}

/// Names one message of a batch for librdkafka's delivery callback (its opaque pointer).
final class DeliveryBox: Sendable {
    let batch: DeliveryBatch
    let index: Int

    init(batch: DeliveryBatch, index: Int) {
        self.batch = batch
        self.index = index
    }

    func complete(_ error: KafkaError?) { batch.complete(index, error) }
}

private let deliveryReportCallback: @convention(c) (OpaquePointer?, UnsafePointer<rd_kafka_message_t>?, UnsafeMutableRawPointer?) -> Void = {
    _, message, _ in
    guard let message, let opaque = message.pointee._private else { return }
    let box = Unmanaged<DeliveryBox>.fromOpaque(opaque).takeRetainedValue()
    let err = message.pointee.err
    box.complete(err == RD_KAFKA_RESP_ERR_NO_ERROR ? nil : KafkaError(err))
}

