import Foundation
import Rules
import Testing
import JSON

/// Great-circle distances and `withinKm`, with points and with named location lists.
@Suite struct GeoPointTests {
    static let paris = GeoPoint(latitude: 48.8566, longitude: 2.3522)!
    static let london = GeoPoint(latitude: 51.5074, longitude: -0.1278)!
    static let newYork = GeoPoint(latitude: 40.7128, longitude: -74.0060)!
    static let losAngeles = GeoPoint(latitude: 34.0522, longitude: -118.2437)!
    static let sydney = GeoPoint(latitude: -33.8688, longitude: 151.2093)!

    @Test(arguments: [
        (paris, london, 343.5),
        (newYork, losAngeles, 3936.0),
        (paris, sydney, 16_960.0),
        (GeoPoint(latitude: 0, longitude: 0)!, GeoPoint(latitude: 0, longitude: 180)!, 20_015.1),
        (GeoPoint(latitude: 90, longitude: 0)!, GeoPoint(latitude: -90, longitude: 0)!, 20_015.1),
        (GeoPoint(latitude: 0, longitude: 179.5)!, GeoPoint(latitude: 0, longitude: -179.5)!, 111.2),
        (paris, paris, 0.0),
    ])
    func knownDistances(from: GeoPoint, to: GeoPoint, km: Double) {
        #expect(abs(from.distanceKm(to: to) - km) < 1, "\(from) to \(to): \(from.distanceKm(to: to))")
        #expect(abs(to.distanceKm(to: from) - from.distanceKm(to: to)) < 1e-9)
    }

    @Test(arguments: [
        (91.0, 0.0), (-90.5, 0.0), (0.0, 180.5), (0.0, -181.0), (Double.nan, 0.0), (0.0, Double.infinity),
    ])
    func refusesPointsOutOfRange(latitude: Double, longitude: Double) {
        #expect(GeoPoint(latitude: latitude, longitude: longitude) == nil)
    }

    @Test func codesAsLatLon() throws {
        let data = try JSONEncoder().encode(Self.paris)
        #expect(try JSONDecoder().decode(JSONValue.self, from: data) == ["lat": 48.8566, "lon": 2.3522])
        #expect(try JSONDecoder().decode(GeoPoint.self, from: data) == Self.paris)
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(GeoPoint.self, from: Data(#"{"lat": 95, "lon": 0}"#.utf8))
        }
    }

    /// Distances around the bound of a rule: just inside and just outside, by 0.1 %.
    @Test(arguments: [(paris, london), (newYork, losAngeles), (paris, sydney)])
    func withinKmAgreesWithTheDistance(center: GeoPoint, other: GeoPoint) throws {
        let distance = center.distanceKm(to: other)
        for (km, inside) in [(distance * 1.001, true), (distance * 0.999, false)] {
            let compiled = try RulesTestSupport.single(
                fact: "signals.geo", op: "withinKm", value: ["km": .double(km), "of": center.json])
            #expect(RulesTestSupport.hits(compiled, ["signals": ["geo": other.json]]) == inside, "\(km) km")
        }
    }

    @Test func withinKmOfANamedList() throws {
        let offices = [Self.newYork, Self.london]
        let compiled = try RulesTestSupport.single(
            fact: "signals.geo", op: "withinKm", value: ["km": 400, "of": "offices"], locations: ["offices": offices])
        #expect(RulesTestSupport.hits(compiled, ["signals": ["geo": Self.paris.json]]))
        #expect(!RulesTestSupport.hits(compiled, ["signals": ["geo": Self.losAngeles.json]]))
        #expect(!RulesTestSupport.hits(compiled, ["signals": ["geo": Self.sydney.json]]))
        // Extra members of the fact (an accuracy radius) do not matter.
        #expect(RulesTestSupport.hits(compiled, ["signals": ["geo": ["lat": 51.5, "lon": 0, "accuracy": 30]]]))
    }

    @Test func anEmptyListIsNeverNear() throws {
        let compiled = try RulesTestSupport.single(
            fact: "signals.geo", op: "withinKm", value: ["km": 20_000, "of": "none"], locations: ["none": []])
        #expect(!RulesTestSupport.hits(compiled, ["signals": ["geo": Self.paris.json]]))
    }

    @Test func halfTheCircumferenceCoversEveryPoint() throws {
        let compiled = try RulesTestSupport.single(
            fact: "signals.geo", op: "withinKm", value: ["km": 20_016, "of": Self.paris.json])
        for point in [Self.sydney, GeoPoint(latitude: -48.8566, longitude: -177.6478)!] {
            #expect(RulesTestSupport.hits(compiled, ["signals": ["geo": point.json]]))
        }
    }

    @Test(arguments: [
        (#"{"lat": 48.85, "lon": 2.35}"#, true),
        (#"{"lat": 48, "lon": 2}"#, true),
        (#"{"lat": -90, "lon": -180}"#, true),
        (#"{"lat": 90, "lon": 180, "accuracy": 12}"#, true),
        (#"{"lat": 90.0001, "lon": 0}"#, false),
        (#"{"lat": 0, "lon": -180.0001}"#, false),
        (#"{"lat": "48.85", "lon": 2.35}"#, false),
        (#"{"lat": 48.85}"#, false),
        (#"{"latitude": 48.85, "longitude": 2.35}"#, false),
        (#"[48.85, 2.35]"#, false),
        (#"{"lat": true, "lon": 2.35}"#, false),
    ])
    func readsPointsFromFacts(json: String, valid: Bool) throws {
        let value = try RulesTestSupport.json(json)
        #expect((GeoPoint(json: value) != nil) == valid)
        // A fact that is no valid point is never near anything, not even with the largest distance.
        let compiled = try RulesTestSupport.single(
            fact: "signals.geo", op: "withinKm", value: ["km": 20_016, "of": Self.paris.json])
        #expect(RulesTestSupport.hits(compiled, ["signals": ["geo": value]]) == valid)
    }

    @Test func locationListsDecodeFromTenantConfiguration() throws {
        let text = #"{"offices": [{"lat": 48.8566, "lon": 2.3522}, {"lat": 51.5074, "lon": -0.1278}], "empty": []}"#
        let locations = try JSONDecoder().decode([String: [GeoPoint]].self, from: Data(text.utf8))
        #expect(locations["offices"] == [Self.paris, Self.london])
        #expect(locations["empty"] == [])
        let compiled = try RulesTestSupport.single(
            fact: "signals.geo", op: "withinKm", value: ["km": 10, "of": "offices"], locations: locations)
        #expect(RulesTestSupport.hits(compiled, ["signals": ["geo": ["lat": 51.5, "lon": -0.12]]]))
    }
}
