import FuzzSupport
import Kafka
import Schema
import ServiceKit

/// Events as the consumers take them from Kafka (CloudEvents 1.0, binary mode): the `ce_*`
/// headers read by `EventEnvelope(record:)`, then the payload decoded and validated as each
/// event type of `EventCatalog` (what every service's handlers do before acting).
///
/// Input: a first byte choosing the payload type, then headers as `name=value` lines, an empty
/// line, and the message value (the JSON payload).
///
/// Properties: every refusal is an `EventDecodingError` (the consumer sends those to the
/// service's dead-letter topic; anything else would stop its partition); an accepted payload
/// encodes and decodes to itself and passes its own validation again.
@main
enum EventFuzz {
    static func main() { Fuzz.run(testOneInput) }

    static let testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt = { data, size in
        let bytes = Fuzz.bytes(data, size)
        guard let selector = bytes.first else { return 0 }
        let payloadType = EventCatalog.payloadTypes[Int(selector) % EventCatalog.payloadTypes.count]
        let (headers, value) = split(bytes.dropFirst())
        let record = KafkaRecord(topic: "fuzz", partition: 0, offset: 0, key: nil, value: value, headers: headers)
        do {
            let envelope = try EventEnvelope(record: record)
            check(payloadType, envelope.data)
        } catch is EventDecodingError {
            return 0
        } catch {
            Fuzz.fail("an envelope refusal is not an EventDecodingError: \(type(of: error))")
        }
        return 0
    }

    /// `name=value` lines up to the first empty line; the rest is the value.
    static func split(_ input: ArraySlice<UInt8>) -> ([(name: String, value: [UInt8])], [UInt8]) {
        var headers: [(name: String, value: [UInt8])] = []
        var rest = input
        while let newline = rest.firstIndex(of: 0x0A) {
            let line = rest[..<newline]
            rest = rest[rest.index(after: newline)...]
            if line.isEmpty { return (headers, Array(rest)) }
            if let equals = line.firstIndex(of: 0x3D) {
                headers.append((String(decoding: line[..<equals], as: UTF8.self), Array(line[line.index(after: equals)...])))
            }
        }
        return (headers, Array(rest))
    }

    static func check<P: EventPayload>(_: P.Type, _ data: [UInt8]) {
        let payload: P
        do {
            payload = try EventCoding.decode(P.self, from: data)
            try payload.validate()
        } catch is EventDecodingError {
            return
        } catch {
            Fuzz.fail("\(P.self): refusal is not an EventDecodingError: \(type(of: error))")
        }
        do {
            let again = try EventCoding.decode(P.self, from: try EventCoding.encode(payload))
            if again != payload { Fuzz.fail("\(P.self) changed through its JSON") }
            try again.validate()
        } catch {
            Fuzz.fail("\(P.self) does not survive its own JSON: \(error)")
        }
    }
}
