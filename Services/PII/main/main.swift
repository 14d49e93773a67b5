import PIIService
import ServiceKit

await ServiceRuntime.main(PIIService.self)
