import Foundation
import HTTPServer
import JSON
import Platform
import Schema
import Testing
@testable import ConsoleService

/// The live feed: server-sent events from the console's buffer.
@Suite struct ConsoleEventFeedTests {
    static func ids(_ response: HTTPResponse) -> [String] {
        String(decoding: response.body, as: UTF8.self).split(separator: "\n").filter { $0.hasPrefix("id: ") }.map { String($0.dropFirst(4)) }
    }

    @Test func eventsArriveAsServerSentEventsAndResumeAfterTheLastID() async throws {
        let (fixture, cookie, _) = try await ConsoleFixture.signedIn("vera")
        await fixture.events.append(id: "e1", type: "signet.authentication.succeeded.v1", source: "/signet/authentication", tenant: "acme", time: Date())
        await fixture.events.append(id: "e2", type: "signet.authentication.failed.v1", source: "/signet/authentication", tenant: "acme", time: Date())
        let first = await fixture.send("GET", "/console/api/events", cookie: cookie, csrf: nil)
        #expect(first.status == 200 && first.header("Content-Type") == "text/event-stream; charset=utf-8")
        let text = String(decoding: first.body, as: UTF8.self)
        #expect(text.hasPrefix("retry: 250\n\n"))
        #expect(text.contains(#""type":"signet.authentication.succeeded.v1""#) && text.contains(#""tenant":"acme""#))
        let ids = Self.ids(first)
        #expect(ids.count == 2 && ids[1].hasSuffix(".2"))

        // After the last id: nothing until an event arrives (the wait ends with a comment).
        let idle = await fixture.send("GET", "/console/api/events", headers: [("Cookie", "signet_console=\(cookie)"), ("Last-Event-ID", ids[1])])
        #expect(Self.ids(idle).isEmpty && String(decoding: idle.body, as: UTF8.self).contains(": nothing new"))
        async let waiting = fixture.send("GET", "/console/api/events", headers: [("Cookie", "signet_console=\(cookie)"), ("Last-Event-ID", ids[1])])
        try await Task.sleep(for: .milliseconds(50))
        await fixture.events.append(id: "e3", type: "signet.authentication.lockout.v1", source: "/signet/authentication", tenant: "bank", time: Date())
        let next = await waiting
        #expect(Self.ids(next).count == 1 && Self.ids(next)[0].hasSuffix(".3"))

        // An id of another epoch (before a restart) counts as none: the newest events again.
        let stale = await fixture.send("GET", "/console/api/events", headers: [("Cookie", "signet_console=\(cookie)"), ("Last-Event-ID", "old.2")])
        #expect(Self.ids(stale).count == 3)

        let counts = await fixture.send("GET", "/console/api/events/counts", cookie: cookie, csrf: nil)
        #expect(try JSONParser.parse(counts.body)["counts"]?["signet.authentication.failed.v1"]?.intValue == 1)
    }

    @Test func theBufferKeepsTheNewestAndShowsNoEventData() async {
        let buffer = ConsoleEventBuffer(capacity: 3)
        for i in 1...5 { await buffer.append(id: "e\(i)", type: "t", source: "/s", tenant: nil, time: Date()) }
        let kept = await buffer.events(after: nil)
        #expect(kept.map(\.sequence) == [3, 4, 5])
        #expect(await buffer.events(after: 4).map(\.id) == ["e5"])
        #expect(await buffer.events(after: 1).map(\.id) == ["e3", "e4", "e5"], "older than the newest 3: not shown")
        // Past the trim (twice the capacity held), and a batch at once.
        await buffer.append((6...13).map { ConsoleEventBuffer.Arrival(id: "e\($0)", type: "u", source: "/s", tenant: "demo", time: Date()) })
        #expect(await buffer.events(after: nil).map(\.id) == ["e11", "e12", "e13"])
        #expect(await buffer.events(after: nil, recent: 2).map(\.id) == ["e12", "e13"])
        #expect(await buffer.events(after: 11).map(\.sequence) == [12, 13])
        #expect(await buffer.countsByType == ["t": 5, "u": 8])
        // What is kept is the envelope's metadata only: the type has no room for a payload.
        let fields = Set(Mirror(reflecting: kept[0]).children.compactMap(\.label))
        #expect(fields == ["sequence", "id", "type", "source", "tenant", "time"])
    }

    @Test func onlySignetTopicsMayBeConfigured() {
        #expect(throws: Environment.ConfigurationError.self) {
            try ConsoleService.configuration(ConsoleFixture.environment(["SIGNET_CONSOLE_EVENT_TOPICS": "signet.authentication,__consumer_offsets"]))
        }
    }
}
