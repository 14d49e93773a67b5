import FIDO
import Foundation
import Platform
import Testing
@testable import RegistrationService

/// Where the registration service loads the FIDO metadata BLOB from: a file, or an `https` URL.
/// Plain `http` is a configuration error at start-up — anyone on the path could withhold a newer
/// BLOB and its revocations — and no loopback exception exists (tests and the local stack use a file).
@Suite struct MetadataSourceConfigurationTests {
    @Test func anHTTPSURLIsADownloadSource() throws {
        let source = try RegistrationService.metadataSource(Environment(["SIGNET_MDS_BLOB_URL": "https://mds3.fidoalliance.org/"]))
        #expect((source as? MetadataURLSource)?.url.absoluteString == "https://mds3.fidoalliance.org/")
    }

    @Test(arguments: ["http://mds3.fidoalliance.org/", "http://127.0.0.1:8000/blob.jwt", "HTTP://localhost/blob", "ftp://mds.example/", "https:///blob", "mds3.fidoalliance.org"])
    func anythingButHTTPSIsAConfigurationError(_ url: String) {
        #expect(throws: Environment.ConfigurationError.self) { try RegistrationService.metadataSource(Environment(["SIGNET_MDS_BLOB_URL": url])) }
        #expect(MetadataURLSource(url: URL(string: url) ?? URL(string: "http://x")!) == nil)
    }

    @Test func aFileComesFirstAndNeitherMeansNoMetadata() throws {
        let file = try RegistrationService.metadataSource(Environment(["SIGNET_MDS_BLOB_FILE": "/etc/signet/blob.jwt", "SIGNET_MDS_BLOB_URL": "http://ignored/"]))
        #expect((file as? MetadataFileSource)?.path == "/etc/signet/blob.jwt")
        #expect(try RegistrationService.metadataSource(Environment([:])) == nil)
    }
}
