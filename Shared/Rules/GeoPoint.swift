#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

import JSON

/// A point on Earth in decimal degrees, as `withinKm` compares them: `{"lat": 48.85, "lon": 2.35}`.
///
/// Latitude is in −90…90 and longitude in −180…180; a point outside those ranges (or not
/// finite) cannot be made. Tenants' named location lists are given to
/// ``Ruleset/compile(for:locations:)`` as `[String: [GeoPoint]]`.
public struct GeoPoint: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The mean Earth radius in kilometres (IUGG), the sphere of every distance here.
    public static let earthRadiusKm = 6371.0088

    /// Degrees north of the equator, −90…90.
    public let latitude: Double
    /// Degrees east of Greenwich, −180…180.
    public let longitude: Double

    /// A point, or `nil` when a coordinate is out of range or not finite.
    ///
    /// - Parameters:
    ///   - latitude: −90…90.
    ///   - longitude: −180…180.
    public init?(latitude: Double, longitude: Double) {
        guard latitude.isFinite, longitude.isFinite, (-90...90).contains(latitude),
            (-180...180).contains(longitude)
        else { return nil }
        self.latitude = latitude
        self.longitude = longitude
    }

    /// The point in a JSON object with numeric `lat` and `lon` in range, or `nil`. Other members
    /// are ignored (a fact may carry an accuracy radius, say).
    ///
    /// - Parameter json: `{"lat": 48.85, "lon": 2.35}`.
    public init?(json: JSONValue) {
        guard case .object(let members) = json, let lat = members["lat"]?.doubleValue,
            let lon = members["lon"]?.doubleValue
        else { return nil }
        self.init(latitude: lat, longitude: lon)
    }

    /// The great-circle distance to `other` in kilometres, by the haversine formula on a sphere
    /// of radius ``earthRadiusKm``.
    ///
    /// - Parameter other: The other point.
    public func distanceKm(to other: GeoPoint) -> Double {
        let phi1 = latitude * .pi / 180
        let phi2 = other.latitude * .pi / 180
        let halfDeltaPhi = (other.latitude - latitude) * .pi / 360
        let halfDeltaLambda = (other.longitude - longitude) * .pi / 360
        let h = sin(halfDeltaPhi) * sin(halfDeltaPhi) + cos(phi1) * cos(phi2) * sin(halfDeltaLambda) * sin(halfDeltaLambda)
        return 2 * Self.earthRadiusKm * asin(min(1, h.squareRoot()))
    }

    /// The point as the JSON object rules carry: `{"lat": …, "lon": …}`.
    public var json: JSONValue { ["lat": .double(latitude), "lon": .double(longitude)] }

    /// `(lat, lon)`.
    public var description: String { "(\(latitude), \(longitude))" }

    // MARK: - Codable

    private enum CodingKeys: String, CodingKey {
        case lat, lon
    }

    /// A point from `{"lat": …, "lon": …}`.
    ///
    /// - Throws: `DecodingError.dataCorrupted` when a coordinate is out of range.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let lat = try container.decode(Double.self, forKey: .lat)
        let lon = try container.decode(Double.self, forKey: .lon)
        guard let point = GeoPoint(latitude: lat, longitude: lon) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "lat must be in -90...90 and lon in -180...180"))
        }
        self = point
    }

    /// Encodes `{"lat": …, "lon": …}`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(latitude, forKey: .lat)
        try container.encode(longitude, forKey: .lon)
    }
}

// MARK: - Precomputed trigonometry

/// A point with the sines and cosines the haversine formula needs, computed once: for a
/// rule's points at compile time, for a request's position when facts are prepared. Comparing
/// two of them then takes multiplications only.
struct GeoTrig: Sendable, BitwiseCopyable {
    /// sin(φ/2).
    let sinHalfLat: Double
    /// cos(φ/2).
    let cosHalfLat: Double
    /// cos φ.
    let cosLat: Double
    /// sin(λ/2).
    let sinHalfLon: Double
    /// cos(λ/2).
    let cosHalfLon: Double

    /// The trigonometry of `point`.
    init(_ point: GeoPoint) {
        let halfLat = point.latitude * .pi / 360
        let halfLon = point.longitude * .pi / 360
        sinHalfLat = sin(halfLat)
        cosHalfLat = cos(halfLat)
        cosLat = cos(2 * halfLat)
        sinHalfLon = sin(halfLon)
        cosHalfLon = cos(halfLon)
    }

    /// The haversine of the central angle to `other`: sin²(Δφ/2) + cos φ₁ cos φ₂ sin²(Δλ/2),
    /// with sin(a − b) expanded so that no trigonometric function is called.
    @inline(__always)
    func haversine(_ other: GeoTrig) -> Double {
        let sinHalfDeltaLat = sinHalfLat * other.cosHalfLat - cosHalfLat * other.sinHalfLat
        let sinHalfDeltaLon = sinHalfLon * other.cosHalfLon - cosHalfLon * other.sinHalfLon
        return sinHalfDeltaLat * sinHalfDeltaLat + cosLat * other.cosLat * sinHalfDeltaLon * sinHalfDeltaLon
    }
}

extension GeoTrig {
    /// The bound on the haversine that "within `km`" means: d = 2R·asin(√h) ≤ km exactly when
    /// h ≤ sin²(km / 2R), for km up to half the circumference, past which every point is near.
    ///
    /// - Parameter km: The distance, positive.
    static func maximumHaversine(km: Double) -> Double {
        let halfAngle = km / (2 * GeoPoint.earthRadiusKm)
        return halfAngle >= .pi / 2 ? .infinity : sin(halfAngle) * sin(halfAngle)
    }
}
