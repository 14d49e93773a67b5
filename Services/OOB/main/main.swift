import OOBService
import ServiceKit

await ServiceRuntime.main(OOBService.self)
